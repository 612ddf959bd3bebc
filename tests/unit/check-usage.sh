#!/bin/sh
# SPDX-License-Identifier: MIT
# The usage the documents show is the usage the tools print: the built
# orbitctl and orbit-demo are asked for --help and compared with
#   - doc/agent.md: the block under "## orbitctl" is `orbitctl --help`,
#     verbatim;
#   - doc/orbitctl.1: every command and every option of `orbitctl --help`
#     is named in its SYNOPSIS or OPTIONS;
#   - doc/orbit-demo.1: every option of `orbit-demo --help` and of
#     `orbit-demo --scenario locks --help` is in its SYNOPSIS, and every
#     option the SYNOPSIS shows is one the tool knows;
#   - doc/orbit-lock.md: the "## Demo" command line names exactly the
#     options of `orbit-demo --scenario locks --help`.
# One named result per document.
src="${top_srcdir:-.}"
build="${top_builddir:-.}"
ctl="$build/agent/orbitctl"
demo="$build/agent/orbit-demo"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0

. "$src/tests/common/check-result.sh" # result NAME STATUS MSGFILE

# The options (--word) of a text, one per line, sorted, without repeats.
options() {
	grep -oE -- '--[a-z][a-z0-9-]*' "$1" | sort -u
}

# A man page as plain text: "\-" is "-", font escapes go.
man_text() {
	sed -e 's/\\-/-/g' -e 's/\\f[BIRP]//g' "$1"
}

if ! "$ctl" --help > "$tmp/ctl" 2>&1 || ! "$demo" --help > "$tmp/demo" 2>&1 ||
	! "$demo" --scenario locks --help > "$tmp/locks" 2>&1; then
	echo "[ RUN      ] test_usage_tools_answer_help"
	echo "orbitctl or orbit-demo (in $build/agent) did not answer --help:"
	cat "$tmp/ctl" "$tmp/demo" "$tmp/locks"
	echo "[  FAILED  ] test_usage_tools_answer_help"
	exit 1
fi

# 1. doc/agent.md shows orbitctl --help as it is.
awk '/^## orbitctl[ \t]*$/ { s = 1; next }
	s && /^```[ \t]*$/ { if (inb) exit; inb = 1; next }
	inb' "$src/doc/agent.md" > "$tmp/agent"
: > "$tmp/msg"
if ! diff -u "$tmp/agent" "$tmp/ctl" > "$tmp/diff"; then
	echo "doc/agent.md: the block under \"## orbitctl\" is not \`orbitctl --help\` (- doc, + tool):" >> "$tmp/msg"
	cat "$tmp/diff" >> "$tmp/msg"
fi
[ -s "$tmp/msg" ] && st=1 || st=0
result test_usage_agent_md_is_orbitctl_help "$st" "$tmp/msg"

# 2. orbitctl(1) names every command and option of orbitctl --help.
man_text "$src/doc/orbitctl.1" > "$tmp/ctl.1"
: > "$tmp/msg"
for o in $(options "$tmp/ctl"); do
	grep -qF -- "$o" "$tmp/ctl.1" ||
		echo "doc/orbitctl.1: orbitctl --help has $o, the page does not" >> "$tmp/msg"
done
for c in $(awk '/^commands:/ { s = 1; next } /^options:/ { s = 0 }
	s && /^  [a-z]/ { print $1 }' "$tmp/ctl"); do
	grep -qE -- "^\.BR? $c( |\$)" "$tmp/ctl.1" ||
		echo "doc/orbitctl.1: orbitctl --help has the command $c, the page does not show it" >> "$tmp/msg"
done
[ -s "$tmp/msg" ] && st=1 || st=0
result test_usage_orbitctl_1_has_every_command_and_option "$st" "$tmp/msg"

# 3. orbit-demo(1): its SYNOPSIS has the options of both scenarios, and no other.
man_text "$src/doc/orbit-demo.1" |
	awk '/^\.SH SYNOPSIS/ { s = 1; next } /^\.SH / { s = 0 } s' > "$tmp/demo.syn"
cat "$tmp/demo" "$tmp/locks" > "$tmp/both"
: > "$tmp/msg"
options "$tmp/both" > "$tmp/o.tool"
options "$tmp/demo.syn" > "$tmp/o.doc"
comm -23 "$tmp/o.tool" "$tmp/o.doc" | sed 's/^/doc\/orbit-demo.1: orbit-demo --help has /; s/$/, the SYNOPSIS does not/' >> "$tmp/msg"
comm -13 "$tmp/o.tool" "$tmp/o.doc" | sed 's/^/doc\/orbit-demo.1: the SYNOPSIS shows /; s/$/, orbit-demo --help does not/' >> "$tmp/msg"
[ -s "$tmp/msg" ] && st=1 || st=0
result test_usage_orbit_demo_1_synopsis_is_the_tool_s "$st" "$tmp/msg"

# 4. doc/orbit-lock.md's demo command line: the options of the locks scenario.
awk '/^## Demo[ \t]*$/ { s = 1; next } /^## / { s = 0 }
	s { t = t " " $0; if ($0 ~ /` runs/) { print t; exit } }' "$src/doc/orbit-lock.md" |
	grep -oE '`[^`]*`' | head -1 > "$tmp/lockdoc"
: > "$tmp/msg"
if [ ! -s "$tmp/lockdoc" ]; then
	echo "doc/orbit-lock.md: no \"\`scripts/demo ...\` runs\" line under \"## Demo\"" >> "$tmp/msg"
else
	options "$tmp/locks" > "$tmp/o.tool"
	options "$tmp/lockdoc" | grep -vx -- '--help' > "$tmp/o.doc"
	grep -q -- '--scenario locks' "$tmp/lockdoc" ||
		echo "doc/orbit-lock.md: the demo line does not say --scenario locks (the default scenario is bank)" >> "$tmp/msg"
	grep -vx -- '--help' "$tmp/o.tool" > "$tmp/o.tool2"
	printf '%s\n' --scenario >> "$tmp/o.tool2"
	sort -u -o "$tmp/o.tool2" "$tmp/o.tool2"
	comm -23 "$tmp/o.tool2" "$tmp/o.doc" | sed 's/^/doc\/orbit-lock.md: orbit-demo --scenario locks --help has /; s/$/, the demo line does not/' >> "$tmp/msg"
	comm -13 "$tmp/o.tool2" "$tmp/o.doc" | sed 's/^/doc\/orbit-lock.md: the demo line has /; s/$/, orbit-demo --scenario locks --help does not/' >> "$tmp/msg"
fi
[ -s "$tmp/msg" ] && st=1 || st=0
result test_usage_orbit_lock_md_demo_line_is_the_tool_s "$st" "$tmp/msg"
exit $fail
