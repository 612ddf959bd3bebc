#!/bin/sh
# SPDX-License-Identifier: MIT
# The man pages are written by hand beside the headers; this check keeps
# them from drifting:
#   - every public function of include/orbit/*.h (ORBIT_API prototypes,
#     function-like macros, static inline helpers) is named in the NAME
#     section of one doc/man3 page and shown in its SYNOPSIS, and every
#     NAME entry is still a public function;
#   - every error code a function's header comment documents appears in
#     that function's RETURN VALUE entry;
#   - every section 3 page has NAME, LIBRARY, SYNOPSIS, DESCRIPTION,
#     RETURN VALUE, ERRORS and SEE ALSO;
#   - orbit(7) lists every section 3 page and orbit-demo(1) in SEE ALSO,
#     and doc/doc.am installs every section 3 page;
#   - every page (sections 1, 3, 7) passes `groff -man -ww -z` (and
#     `mandoc -Tlint` where installed) without a warning.
# One named result per page and per check.
src="${top_srcdir:-.}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0

. "$src/tests/common/check-result.sh" # result NAME STATUS MSGFILE

# Public functions with the codes their comment documents:
# "<header> <name> <code> <code> ..." per line. A comment documents the
# declarations that follow it up to the next comment or type.
for h in "$src"/include/orbit/*.h; do
	awk -v h="$(basename "$h")" '
		function codes(t,   out, s, m) {
			out = ""; s = t
			while (match(s, /-(ORBIT_E[A-Z0-9]+|E[A-Z0-9]+)/)) {
				m = substr(s, RSTART + 1, RLENGTH - 1)
				if (index(" " out " ", " " m " ") == 0) out = out " " m
				s = substr(s, RSTART + RLENGTH)
			}
			return out
		}
		/^[ \t]*\/\*/ { incomment = 1; comment = ""; first = $0; if (first ~ /^\/\*\*?[ \t]*$/) first = "" }
		incomment && first == "" && $0 ~ /orbit_/ && $0 !~ /^[ \t]*\/\*/ { first = $0 }
		incomment {
			comment = comment " " $0
			if ($0 ~ /\*\//) {
				incomment = 0
				# Only what the comment says a call returns counts.
				ret = comment
				if (match(ret, /Returns?:?[ \t]/)) ret = substr(ret, RSTART)
				else ret = ""
				cur = codes(ret)
				# "a, b - ...": the comment of functions declared elsewhere too
				if (match(first, /orbit_[a-z0-9_]+(, orbit_[a-z0-9_]+)+ - /)) {
					k = split(substr(first, RSTART, RLENGTH - 3), nm, /, /)
					for (i = 1; i <= k; i++) named[nm[i]] = cur
				}
			}
			next
		}
		/^(struct|enum|typedef) / { cur = "" }
		/^ORBIT_API|^static inline|^#define orbit_[a-z0-9_]+\(/ {
			line = $0
			if ($0 ~ /^#define/) { sub(/^#define /, "", line) }
			if (match(line, /orbit_[a-z0-9_]+[ \t]*\(/)) {
				name = substr(line, RSTART, RLENGTH)
				sub(/[ \t]*\($/, "", name)
				print h, name ((name in named) ? named[name] : cur)
			} else {
				# the name is on a continuation line
				pending = 1
			}
			next
		}
		pending && match($0, /orbit_[a-z0-9_]+[ \t]*\(/) {
			name = substr($0, RSTART, RLENGTH); sub(/[ \t]*\($/, "", name)
			print h, name ((name in named) ? named[name] : cur); pending = 0
		}' "$h"
done > "$tmp/functions"

# NAME entries of each section 3 page: "<page> <name>" per line.
for m in "$src"/doc/man3/*.3; do
	[ -f "$m" ] || continue
	awk -v p="$(basename "$m")" '
		/^\.SH / { inname = ($0 == ".SH NAME"); next }
		inname {
			line = $0
			sub(/ \\- .*/, "", line)
			n = split(line, a, /, */)
			for (i = 1; i <= n; i++) if (a[i] != "") print p, a[i]
			if ($0 ~ / \\- /) inname = 0
		}' "$m"
done > "$tmp/names"

# 1. Every public function has a page; its SYNOPSIS shows it; its codes are there.
: > "$tmp/msg"
while read -r h name codes; do
	page=$(awk -v n="$name" '$2 == n { print $1; exit }' "$tmp/names")
	if [ -z "$page" ]; then
		echo "$h: $name has no man page entry (add it to the NAME and SYNOPSIS of a doc/man3 page)" >> "$tmp/msg"
		continue
	fi
	m="$src/doc/man3/$page"
	awk '/^\.SH SYNOPSIS/ { s = 1; next } /^\.SH / { s = 0 } s' "$m" |
		grep -qF "\\fB$name\\fP(" ||
		echo "$page: SYNOPSIS does not show $name()" >> "$tmp/msg"
	[ -n "$codes" ] || continue
	# The function's own RETURN VALUE entry: from the .TP tag naming it to
	# the next .TP or section.
	n="\\fB$name\\fP(" awk '
		/^\.SH / { rv = ($0 == ".SH RETURN VALUE"); on = 0; next }
		!rv { next }
		/^\.TP/ { tag = 1; on = 0; next }
		tag { tag = 0; on = index($0, ENVIRON["n"]) > 0; next }
		on' "$m" | sed 's/\\-/-/g' > "$tmp/entry"
	if [ ! -s "$tmp/entry" ]; then
		echo "$page: RETURN VALUE has no entry for $name()" >> "$tmp/msg"
		continue
	fi
	for c in $codes; do
		grep -qE -- "-$c\\b" "$tmp/entry" ||
			echo "$page: $name returns -$c ($h) but its RETURN VALUE entry does not say so" >> "$tmp/msg"
	done
done < "$tmp/functions"
[ -s "$tmp/msg" ] && st=1 || st=0
result test_man_every_public_function_documented "$st" "$tmp/msg"

# 1b. orbit_error(3) explains every code of the one table in orbit/error.h.
: > "$tmp/msg"
for c in $(sed -n 's/^[ \t]*XX(\(E[A-Z0-9]*\),.*/\1/p' "$src/include/orbit/error.h"); do
	grep -qx "\.B $c" "$src/doc/man3/orbit_error.3" ||
		grep -qx "\.B ORBIT_$c" "$src/doc/man3/orbit_error.3" ||
		echo "orbit_error.3: ERRORS does not explain $c (orbit/error.h)" >> "$tmp/msg"
done
[ -s "$tmp/msg" ] && st=1 || st=0
result test_man_error_page_lists_every_code "$st" "$tmp/msg"

# 2. Every NAME entry is a public function (or a concept page naming itself).
: > "$tmp/msg"
while read -r page name; do
	grep -q " $name\\b" "$tmp/functions" && continue
	[ "$name" = "$(basename "$page" .3)" ] && [ "$(grep -c "^$page " "$tmp/names")" -eq 1 ] && continue
	echo "$page: NAME lists $name, which no public header declares" >> "$tmp/msg"
done < "$tmp/names"
[ -s "$tmp/msg" ] && st=1 || st=0
result test_man_no_stale_name_entry "$st" "$tmp/msg"

# 3. Sections of each section 3 page.
for m in "$src"/doc/man3/*.3; do
	[ -f "$m" ] || continue
	: > "$tmp/msg"
	for s in "NAME" "LIBRARY" "SYNOPSIS" "DESCRIPTION" "RETURN VALUE" "ERRORS" "SEE ALSO"; do
		grep -qx "\\.SH $s" "$m" || echo "$(basename "$m"): no $s section" >> "$tmp/msg"
	done
	[ -s "$tmp/msg" ] && st=1 || st=0
	result "test_man_sections_$(basename "$m" .3)" "$st" "$tmp/msg"
done

# 4. orbit(7) points to every page.
: > "$tmp/msg"
awk '/^\.SH SEE ALSO/ { s = 1; next } /^\.SH / { s = 0 } s' "$src/doc/orbit.7" | sed 's/\\-/-/g' > "$tmp/seealso"
for m in "$src"/doc/man3/*.3 "$src"/doc/orbit-demo.1 "$src"/doc/orbitctl.1; do
	[ -f "$m" ] || { echo "$m is missing" >> "$tmp/msg"; continue; }
	b=$(basename "$m"); sec=${b##*.}; b=${b%.*}
	grep -qF ".BR $b ($sec)" "$tmp/seealso" || echo "orbit.7: SEE ALSO does not list $b($sec)" >> "$tmp/msg"
done
[ -s "$tmp/msg" ] && st=1 || st=0
result test_man_orbit7_lists_every_page "$st" "$tmp/msg"

# 5. make install installs every page (doc/doc.am lists each section 3 page).
: > "$tmp/msg"
for m in "$src"/doc/man3/*.3; do
	grep -q "doc/man3/$(basename "$m")\\>" "$src/doc/doc.am" ||
		echo "doc/doc.am: ORBIT_MAN3 does not list doc/man3/$(basename "$m")" >> "$tmp/msg"
done
[ -s "$tmp/msg" ] && st=1 || st=0
result test_man_every_page_installed "$st" "$tmp/msg"

# 6. Lint: no warning from groff (and mandoc where installed).
for m in "$src"/doc/*.[1-9] "$src"/doc/man3/*.3; do
	[ -f "$m" ] || continue
	groff -man -ww -z "$m" > "$tmp/msg" 2>&1
	if command -v mandoc > /dev/null; then
		mandoc -Tlint -Wwarning "$m" >> "$tmp/msg" 2>&1
	fi
	[ -s "$tmp/msg" ] && st=1 || st=0
	result "test_man_lint_$(basename "$m" | tr -c 'A-Za-z0-9\n' '_')" "$st" "$tmp/msg"
done
exit $fail
