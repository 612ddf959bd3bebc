# SPDX-License-Identifier: MIT
# Sourced by the shell checks of tests/unit: one named result in cmocka's
# console form, which tests/common/run-test turns into a TAP result.
# result NAME STATUS FILE: STATUS 0 is a pass; otherwise FILE (when not
# empty) is printed as the reason and $fail is set to 1.
result() {
	echo "[ RUN      ] $1"
	if [ "$2" -eq 0 ]; then
		echo "[       OK ] $1"
	else
		[ -s "$3" ] && cat "$3"
		echo "[  FAILED  ] $1"
		fail=1
	fi
}
