#!/bin/sh
# SPDX-License-Identifier: MIT
# Public texts stand on their own: the installed headers, README, NEWS,
# CONTRIBUTING, doc/*.md and every man page state each rule in words and
# never send the reader to a document or a tracker they do not have
# (design specifications by section, "§6.1", "spec 07", their ZLink* class
# names, issue numbers). Internal sources (*.c, internal headers, tests)
# may keep such references. One named result per file.
src="${top_srcdir:-.}"
fail=0
# ERE, one per line: what a user cannot look up.
pats='§
ZLink
\<[Ss]pec [0-9]
\<[Tt]he spec\>
\<spec'"'"'s\>
\<spec/
\<[Ss]pec "
\<[Ii]ssues? #?[0-9]
\<Framework API [0-9]'
for f in "$src"/include/orbit/*.h "$src"/README.md "$src"/NEWS "$src"/CONTRIBUTING.md \
	"$src"/doc/*.md "$src"/doc/*.[1-9] "$src"/doc/man3/*.3; do
	[ -f "$f" ] || continue
	rel=${f#"$src"/}
	t="test_public_text_$(printf '%s' "$rel" | tr -c 'A-Za-z0-9' '_')"
	echo "[ RUN      ] $t"
	hits=$(printf '%s\n' "$pats" | grep -nE -f - "$f")
	if [ -n "$hits" ]; then
		echo "$rel cites a text its reader cannot read; say the rule itself:"
		printf '%s\n' "$hits" | sed "s|^|$rel:|"
		echo "[  FAILED  ] $t"
		fail=1
	else
		echo "[       OK ] $t"
	fi
done
exit $fail
