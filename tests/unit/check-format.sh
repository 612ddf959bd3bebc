#!/bin/sh
# SPDX-License-Identifier: MIT
# make check's entry for scripts/check-format (clang-format over the
# tracked sources; a skip with its reason until switched on). Here, and not
# in TESTS as scripts/check-format, because a VPATH build has a tests/unit/
# directory for the log to go to and no scripts/ one.
exec sh "${top_srcdir:-.}/scripts/check-format" "$@"
