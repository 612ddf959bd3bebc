#!/bin/sh
# SPDX-License-Identifier: MIT
# Spec 07 §3 and §10 "Submission path": registering a Spot handler, an
# Actor handler, a timer callback or a session callback gives the
# application no means of naming which queue that work runs on.
#
# Checked on the exported surface itself, not by grepping for one type
# name. The executor headers (orbit/spot_executor.h, orbit/executor.h)
# are run through the compiler's preprocessor (macros expanded, comments
# gone), and every declaration they make is parsed: each function
# prototype (ORBIT_API functions, function-pointer typedefs and fields)
# with the type and name of every parameter and its return type, and
# every struct field and typedef. It fails when
#   - a parameter, return type, field or typedef has a serial queue type
#     (orbit_serial_queue_t, struct orbit_serial_queue, pointers to them);
#   - a parameter, or a field of an options struct (what a caller fills
#     in), is named like a queue or a queue index (queue, queue_index,
#     queue_id, qidx, q, ...);
#   - a function's own name names a queue (orbit_spot_execute_on_queue);
#   - liborbit.so exports an executor symbol (orbit_spot_*, orbit_actor_*,
#     orbit_session_*, orbit_work_*) that these headers do not declare (so
#     this parse could not check it), or the headers declare a function
#     the library does not export.
# Plus the §2 internal check conditions: only the Spot coordinator has
# queue maps (its timer map and its Actor table), and no other lib/ file
# names its Actor/timer entries.
# Prints cmocka-style lines so scripts/test counts it.
src="${top_srcdir:-.}"
build="${top_builddir:-.}"
inc="$src/include"
headers="$inc/orbit/spot_executor.h $inc/orbit/executor.h $inc/orbit/spot_queue.h"
fail=0

# One line per declaration the headers make (from their own lines only):
#   F <name> <return type> | <param type>\t<param name> | ...   (a function)
#   P ... the same for a function-pointer typedef or field
#   S <struct> <field type>\t<field name>
#   T <type>\t<typedef name>
decls() {
	for h in $headers; do printf '#include "%s"\n' "$h"; done |
	${CC:-cc} -E -I"$inc" -x c - 2>/dev/null | awk -v hdrs="$headers" '
	BEGIN { n = split(hdrs, hv, " "); for (i = 1; i <= n; i++) want[hv[i]] = 1 }
	/^# [0-9]+ "/ { f = $3; gsub(/"/, "", f); keep = (f in want); next }
	keep { text = text " " $0 }
	function trim(s) { gsub(/^[ \t]+|[ \t]+$/, "", s); return s }
	# Strip __attribute__((...)), nested parentheses included.
	function noattr(s,   i, d, out, c) {
		while ((i = index(s, "__attribute__")) > 0) {
			out = substr(s, 1, i - 1); s = substr(s, i + 13)
			d = 0
			while (length(s) > 0) {
				c = substr(s, 1, 1); s = substr(s, 2)
				if (c == "(") d++
				else if (c == ")") { d--; if (d == 0) break }
			}
			s = out s
		}
		return s
	}
	# Split a parameter list at top-level commas.
	function params(s, out,   n, d, i, c, cur) {
		n = 0; d = 0; cur = ""
		for (i = 1; i <= length(s); i++) {
			c = substr(s, i, 1)
			if (c == "(") d++
			if (c == ")") d--
			if (c == "," && d == 0) { out[++n] = trim(cur); cur = ""; continue }
			cur = cur c
		}
		if (trim(cur) != "") out[++n] = trim(cur)
		return n
	}
	# "type name" -> type "\t" name (name empty when there is none).
	function split_tn(p,   m, name) {
		p = trim(p)
		if (p == "void" || p == "...") return p "\t"
		gsub(/\[[^]]*\]/, "", p)
		if (match(p, /[A-Za-z_][A-Za-z0-9_]*$/)) {
			name = substr(p, RSTART)
			m = trim(substr(p, 1, RSTART - 1))
			# unnamed: "int", "unsigned long", "struct tag", "const foo_t"
			if (m == "" || m ~ /(^| )(struct|enum|union)$/ || m ~ /^(const|volatile)$/ ||
			    name ~ /^(void|char|short|int|long|float|double|signed|unsigned|_Bool)$/)
				return p "\t"
			return m "\t" name
		}
		return p "\t"
	}
	function emit_fn(d,   lp, head, name, ret, plist, np, pv, i, tn, out) {
		# function pointer: ret (*name)(params)
		ptr = 0
		if (match(d, /\( *\* *[A-Za-z_][A-Za-z0-9_]* *\) *\(/)) {
			ptr = 1
			head = substr(d, RSTART, RLENGTH)
			ret = trim(substr(d, 1, RSTART - 1))
			plist = substr(d, RSTART + RLENGTH)
			name = head; gsub(/[()* ]/, "", name)
		} else if (match(d, /[A-Za-z_][A-Za-z0-9_]* *\(/)) {
			name = substr(d, RSTART, RLENGTH); gsub(/[ (]/, "", name)
			ret = trim(substr(d, 1, RSTART - 1))
			plist = substr(d, RSTART + RLENGTH)
		} else return
		sub(/\) *$/, "", plist)
		gsub(/^typedef /, "", ret); gsub(/^extern /, "", ret)
		out = (ptr ? "P " : "F ") name " " ret
		np = params(plist, pv)
		for (i = 1; i <= np; i++) { tn = split_tn(pv[i]); out = out " | " tn }
		print out
	}
	END {
		text = noattr(text)
		gsub(/extern "C" *\{/, "", text)
		n = split(text, st, ";")
		instruct = ""
		for (i = 1; i <= n; i++) {
			d = trim(st[i])
			if (d ~ /^\}/) { instruct = ""; d = trim(substr(d, 2)) }
			if (d == "") continue
			if (d ~ /^(typedef )?enum[ {]/) continue
			if (index(d, "{")) {
				h = substr(d, 1, index(d, "{") - 1)
				if (match(h, /struct [A-Za-z_][A-Za-z0-9_]*/))
					instruct = substr(h, RSTART + 7, RLENGTH - 7)
				else
					instruct = "(anonymous)"
				d = trim(substr(d, index(d, "{") + 1))
				if (d == "") continue
			}
			if (index(d, "(")) { emit_fn(d); continue }
			if (instruct != "") {
				tn = split_tn(d); print "S " instruct " " tn
			} else if (d ~ /^typedef /) {
				tn = split_tn(substr(d, 9)); print "T " tn
			}
		}
	}'
}

queue_type='orbit_serial_queue_t|struct orbit_serial_queue([^_A-Za-z0-9]|$)'
queue_name='(^|_)(queue|queues|queue_index|queue_id|qidx|qid|qi|q|qindex|queue_no)(_|$)'

t=test_s3_exported_surface_takes_no_queue
echo "[ RUN      ] $t"
d=$(decls)
nf=$(printf '%s\n' "$d" | grep -c '^F orbit_')
bad=$(printf '%s\n' "$d" | awk -F' \\| ' -v qt="$queue_type" -v qn="$queue_name" '
	/^[FP] / {
		split($1, hd, " "); fn = hd[2]; ret = $1; sub(/^[FP] [^ ]+ /, "", ret)
		if (ret ~ qt) print fn ": returns a queue (" ret ")"
		if (fn ~ /queue/) print fn ": its name names a queue"
		for (i = 2; i <= NF; i++) {
			split($i, tn, "\t")
			if (tn[1] ~ qt) print fn ": parameter " i - 1 " (" tn[1] " " tn[2] ") is a queue"
			if (tn[2] ~ qn) print fn ": parameter " i - 1 " (" tn[1] " " tn[2] ") names a queue"
		}
	}
	/^S / {
		split($0, tn, "\t"); sh = tn[1]; sub(/^S /, "", sh)
		st = sh; sub(/ .*/, "", st); ty = sh; sub(/^[^ ]+ /, "", ty)
		if (ty ~ qt) print "struct " st ": field " tn[2] " (" ty ") holds a queue"
		if (st ~ /_options$/ && tn[2] ~ qn) print "struct " st ": option " tn[2] " lets a caller pick a queue"
	}
	/^T / {
		split($0, tn, "\t"); ty = tn[1]; sub(/^T /, "", ty)
		if (ty ~ qt) print "typedef " tn[2] ": another name for a queue (" ty ")"
	}')
if [ "$nf" -lt 20 ]; then
	echo "only $nf orbit_* prototypes parsed from $headers: the parse is broken"; fail=1
	echo "[  FAILED  ] $t"
elif [ -n "$bad" ]; then
	printf '%s\n' "$bad"
	echo "these let a caller hold, pass or pick a queue (07 §3)"; fail=1
	echo "[  FAILED  ] $t"
else
	np=$(printf '%s\n' "$d" | awk -F' \\| ' '/^[FP] / { n += NF - 1 } END { print n + 0 }')
	echo "$nf prototypes, $np parameters, none takes, returns or names a queue"
	echo "[       OK ] $t"
fi

t=test_s3_every_exported_executor_symbol_is_checked
echo "[ RUN      ] $t"
so="$build/.libs/liborbit.so"
if [ ! -f "$so" ]; then
	echo "no $so (static-only build?)"; echo "[  SKIPPED ] $t"
else
	declared=$(printf '%s\n' "$d" | awk '/^F orbit_/ { print $2 }' | sort -u)
	exported=$(nm -D --defined-only "$so" | awk '{ print $3 }' |
		grep -E '^orbit_(spot|actor|session|work)_' | sort -u)
	hidden=$(printf '%s\n' "$exported" | grep -vxF "$declared")
	missing=$(printf '%s\n' "$declared" | grep -vxF "$exported")
	if [ -z "$exported" ]; then
		echo "no executor symbols exported by $so"; fail=1
		echo "[  FAILED  ] $t"
	elif [ -n "$hidden" ] || [ -n "$missing" ]; then
		[ -n "$hidden" ] && { echo "exported but not declared in the executor headers:"; echo "$hidden"; }
		[ -n "$missing" ] && { echo "declared in the executor headers but not exported:"; echo "$missing"; }
		fail=1
		echo "[  FAILED  ] $t"
	else
		echo "$(printf '%s\n' "$exported" | wc -l) exported executor symbols, each declared and checked"
		echo "[       OK ] $t"
	fi
fi

t=test_s2_only_the_spot_coordinator_has_queue_maps
echo "[ RUN      ] $t"
bad=$(grep -ln 'struct etab\b\|actor_entry\|timer_entry' \
	"$src"/lib/actor_executor.c "$src"/lib/session_executor.c \
	"$src"/lib/serial_executor.c "$src"/lib/serial_executor.h 2>&1)
if [ ! -f "$src/lib/spot_executor.c" ] ||
	! grep -q '_Atomic(struct etab \*) atab, ttab;' "$src/lib/spot_executor.c"; then
	echo "the Spot coordinator's maps are not where this check looks"; fail=1
	echo "[  FAILED  ] $t"
elif [ -n "$bad" ]; then
	echo "a map or an Actor/timer entry outside the Spot coordinator:"; echo "$bad"; fail=1
	echo "[  FAILED  ] $t"
else
	echo "[       OK ] $t"
fi
exit $fail
