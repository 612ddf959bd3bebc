#!/bin/sh
# SPDX-License-Identifier: MIT
# One include discipline for the tree's C sources:
#   test_sources_include_config_first  every .c of the library, the tools and
#       the tests includes "config.h" as its first include, written so
#       (examples/ are programs a user writes: they never see config.h);
#   test_public_headers_one_style      public headers are included as
#       <orbit/x.h> everywhere, the installed headers among themselves too
#       (what works after `make install`), never "include/orbit/x.h".
src="${top_srcdir:-.}"
cd "$src" || exit 1
rc=0
echo "[ RUN      ] test_sources_include_config_first"
bad=$(for f in shm/*.c lib/*.c agent/*.c base/*.c tests/*/*.c; do
	[ -f "$f" ] || continue
	first=$(grep -m1 '^[ \t]*#[ \t]*include' "$f")
	case "$first" in
	'#include "config.h"'*) ;;
	*) echo "$f: first include is '$first', not '#include \"config.h\"'" ;;
	esac
done)
if [ -n "$bad" ]; then
	echo "$bad"; echo "[  FAILED  ] test_sources_include_config_first"; rc=1
else
	echo "[       OK ] test_sources_include_config_first"
fi
echo "[ RUN      ] test_public_headers_one_style"
bad=$(grep -nE '^[ \t]*#[ \t]*include[ \t]*("(include/)?orbit/|<include/orbit/)' \
	shm/*.[ch] lib/*.[ch] agent/*.[ch] base/*.[ch] include/orbit/*.h tests/*/*.[ch] \
	examples/*.c 2>/dev/null)
bad2=$(grep -n 'config\.h' include/orbit/*.h | grep '#[ \t]*include')
if [ -n "$bad$bad2" ]; then
	printf '%s\n%s\n' "$bad" "$bad2" | grep . | sed 's/$/  (write <orbit\/x.h>; no config.h in a public header)/'
	echo "[  FAILED  ] test_public_headers_one_style"; rc=1
else
	echo "[       OK ] test_public_headers_one_style"
fi
exit $rc
