#!/bin/sh
# SPDX-License-Identifier: MIT
# Public headers stand alone: each compiles on its own with only
# include/ on the path (no internal header, no config.h), in strict C11.
src="${top_srcdir:-.}"
cc=${CC:-cc}
fail=0
for h in "$src"/include/orbit/*.h; do
	name=$(basename "$h" .h)
	t="test_public_header_$name"
	echo "[ RUN      ] $t"
	if printf '#include <orbit/%s.h>\nint main(void) { return 0; }\n' "$name" |
		$cc -std=c11 -Wall -Wextra -Werror -pedantic -I"$src/include" -x c - -fsyntax-only 2>&1; then
		echo "[       OK ] $t"
	else
		echo "[  FAILED  ] $t"; fail=1
	fi
done
exit $fail
