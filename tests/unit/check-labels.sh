#!/bin/sh
# SPDX-License-Identifier: MIT
# Memory-order labels pair up. A label such as "LK-R1" is defined where a
# comment starts with it ("/* LK-R1: release, pairs with LK-A1 in ...") or
# a line of a block comment does (a synchronization table's row); it is
# referenced anywhere else. The checks, each a named result:
#   test_labels_prefixed       every label carries its module's prefix, and
#                              a prefix is defined only in its module's files
#                              (the table below: one place, no collisions);
#                              no bare "A1" where a label is meant
#   test_labels_defined        every label a comment or a guide names is
#                              defined somewhere ("pairs with X" where X
#                              does not exist fails)
#   test_labels_paired         every defined label names a partner label or
#                              is named by one; every "pairs with" written at
#                              a label names a label
#   test_labels_pairs_agree    if X pairs with Y and Y's own "pairs with"
#                              names labels, X is among them
# Usage: check-labels.sh [file...] (default: the tree's sources and guides).
src="${top_srcdir:-.}"
cd "$src" || exit 1
if [ $# -eq 0 ]; then
	set -- shm/*.[ch] lib/*.[ch] agent/*.[ch] base/*.[ch] include/orbit/*.h doc/*.md
fi

# prefix  module files (an ERE on the path)  the module
PREFIXES='
LK ^shm/lock                  lock table (lock.c, lock_table.h)
RG ^shm/ring                  transition rings
DB ^shm/doorbell              futex doorbell
SG ^shm/segment               segment create/open
ST ^shm/stats                 stats segment
MB ^shm/members               member directory
SQ ^shm/spot_queue            cross-process Spot queue
SL ^lib/state_lane            state lane
WP ^lib/worker_pool           worker pool
SX ^lib/serial_executor       serial executor layer (coordinator, record pool, actor info)
SP ^lib/spot_executor         Spot coordinator (Actor table)
SN ^lib/session_executor      session coordinator (final gate)
AG ^agent/agent               agent thread (loop, death watcher, view)
AT ^agent/agent_test          agent test hooks
SH ^agent/spot_host           Spot host
FG ^base/fork_guard           fork guard (pid cache)
'

printf '%s\n' "$PREFIXES" | awk -v files="$*" '
function fail(test, where, msg) {
	bad[test] = bad[test] where ": " msg "\n"
}
function lbl_re() { return "[A-Z][A-Z]+-[A-Z][A-Z]?[0-9]+[a-z]?'"'"'?" }
# Strip a comment line of its leaders and add it to the comment being read.
function add_line(t) {
	sub(/^[ \t]*\*?[ \t]*/, "", t)
	ctext[nc] = ctext[nc] (ctext[nc] == "" && !started ? "" : "\n") t
	started = 1
}
function begin_comment(f, l) {
	nc++; cfile[nc] = f; cline[nc] = l; ctext[nc] = ""; started = 0
}
# Read a C file: every comment as one text (lines joined by newlines).
function read_c(f,    line, l, s, incom, m, c) {
	l = 0; incom = 0
	while ((getline line < f) > 0) {
		l++
		s = line
		if (incom) {
			if ((m = index(s, "*/")) > 0) {
				add_line(substr(s, 1, m - 1)); incom = 0; s = substr(s, m + 2)
			} else {
				add_line(s); continue
			}
		}
		# Outside a comment: skip strings and characters, find comments.
		while (length(s) > 0) {
			if (!match(s, /"|'"'"'|\/\*|\/\//))
				break
			c = substr(s, RSTART, RLENGTH)
			s = substr(s, RSTART + RLENGTH)
			if (c == "\"" || c == "'"'"'") {
				while (length(s) > 0) {
					if (substr(s, 1, 1) == "\\") { s = substr(s, 3); continue }
					if (substr(s, 1, 1) == c) { s = substr(s, 2); break }
					s = substr(s, 2)
				}
			} else if (c == "//") {
				begin_comment(f, l); add_line(s); s = ""
			} else {
				begin_comment(f, l)
				if ((m = index(s, "*/")) > 0) {
					add_line(substr(s, 1, m - 1)); s = substr(s, m + 2)
				} else {
					add_line(s); incom = 1; s = ""
				}
			}
		}
	}
	close(f)
}
# A guide: each line is a text of its own (references only).
function read_md(f,    line, l) {
	l = 0
	while ((getline line < f) > 0) {
		l++
		begin_comment(f, l); ctext[nc] = line; started = 1; isdoc[nc] = 1
	}
	close(f)
}
function lineof(k, pos,    t, n) {
	t = substr(ctext[k], 1, pos); n = gsub(/\n/, "", t)
	return cfile[k] ":" (cline[k] + n)
}
function owner_ok(p, f) {
	return (p in pre) && f ~ pre[p]
}
BEGIN { L = lbl_re() }
NF >= 2 {
	if ($1 in pre)
		fail("test_labels_prefixed", "check-labels.sh", "prefix " $1 " listed twice")
	pre[$1] = $2
	next
}
END {
	nfiles = split(files, fl, " ")
	for (i = 1; i <= nfiles; i++) {
		if (fl[i] ~ /\.md$/) read_md(fl[i]); else read_c(fl[i])
	}
	# Pass 1: definitions, clauses, references, per comment.
	for (k = 1; k <= nc; k++) {
		t = ctext[k]
		flat = t; gsub(/\n/, " ", flat)
		nd = 0
		if (!isdoc[k]) {
			# Definitions: at the start of a comment line, or after "; ".
			off = 0; s = t
			while (match(s, "(^|\n|; )" L "((/|, )" L ")*( \\(again[^)]*\\)| again| [A-Z][A-Z]?| [a-z_]+)?(:| again|,)")) {
				d = substr(s, RSTART, RLENGTH); p = off + RSTART
				ms = RSTART; ml = RLENGTH
				head = d
				# the labels of this definition
				while (match(head, L)) {
					lab = substr(head, RSTART, RLENGTH)
					split(lab, pp, "-")
					head = substr(head, RSTART + RLENGTH)
					# A label of another module, at a call into it
					# ("DB-D1/DB-D2: wakes only if ...") is a reference.
					if (!owner_ok(pp[1], cfile[k])) {
						if (!(pp[1] in pre))
							fail("test_labels_prefixed", lineof(k, p),
							     lab ": unknown prefix " pp[1] " (add it to the table in check-labels.sh)")
						continue
					}
					nd++; dpos[nd] = p; dlab[nd] = lab
					def[lab] = def[lab] " " lineof(k, p)
				}
				off += ms + ml - 1; s = substr(s, ms + ml)
			}
			# "no partner" (said so, with the reason) exempts the labels
			# defined in this comment from test_labels_paired.
			if (flat ~ /no partner/)
				for (j = 1; j <= nd; j++)
					nopartner[dlab[j]] = 1
			# Bare labels where a label is meant: "A1:" opening a line of a
			# comment about ordering, "R4/A4", "W1..W2".
			if (flat ~ /acquire|release|seq_cst|acq_rel|fence|relaxed|[Pp]airs with/) {
				s = t; off = 0
				while (match(s, /(^|\n)[A-Z][A-Z]?[0-9]+[a-z]?'"'"'?( \(again\)| again)?:/)) {
					fail("test_labels_prefixed", lineof(k, off + RSTART),
					     "bare label " substr(s, RSTART, RLENGTH) " (no module prefix)")
					off += RSTART + RLENGTH - 1; s = substr(s, RSTART + RLENGTH)
				}
			}
			s = flat; off = 0
			while (match(s, L "(/|\\.\\.)[A-Z][A-Z]?[0-9]+[a-z]?([^A-Za-z0-9-]|$)")) {
				fail("test_labels_prefixed", lineof(k, off + RSTART),
				     "bare label after " substr(s, RSTART, RLENGTH) " (write the prefix)")
				off += RSTART + RLENGTH - 1; s = substr(s, RSTART + RLENGTH)
			}
		}
		# Clauses: "pairs with ..." up to ":", ";", ". " or the end.
		s = flat; off = 0
		while (match(s, /[Pp]airs[ \t]+with[ \t]/)) {
			cp = off + RSTART
			ms = RSTART; ml = RLENGTH
			rest = substr(s, RSTART + RLENGTH)
			cl = rest
			# ... or the next definition, or a blank line
			for (j = 1; j <= nd; j++)
				if (dpos[j] > cp + ml && dpos[j] - cp - ml < length(cl)) {
					cl = substr(cl, 1, dpos[j] - cp - ml)
					break
				}
			if ((j = index(substr(t, cp + ml), "\n\n")) > 0 && j <= length(cl))
				cl = substr(cl, 1, j - 1)
			if (match(cl, /:|;|\. |\.$/))
				cl = substr(cl, 1, RSTART - 1)
			# owner: the last definition before the clause in this comment
			own = ""; opos = -1
			for (j = 1; j <= nd; j++)
				if (dpos[j] <= cp) {
					own = dlab[j]; opos = dpos[j]
				}
			# a definition list ("SQ-O1/SQ-O2") owns it as a whole: take every
			# label defined at the same position
			nl = 0; c2 = cl
			while (match(c2, L)) {
				lab = substr(c2, RSTART, RLENGTH)
				nl++
				ref[lab] = ref[lab] " " lineof(k, cp)
				if (own != "") {
					for (j = 1; j <= nd; j++)
						if (dpos[j] == opos && index(pw[dlab[j]] " ", " " lab " ") == 0) {
							pw[dlab[j]] = pw[dlab[j]] " " lab
							named[lab] = 1
						}
				}
				c2 = substr(c2, RSTART + RLENGTH)
			}
			c2 = " " cl " "
			while (match(c2, /[^A-Za-z0-9'"'"'-][A-Z][A-Z]?[0-9]+[a-z]?'"'"'?[^A-Za-z0-9'"'"'-]/)) {
				w = substr(c2, RSTART + 1, RLENGTH - 2)
				if (w != "C11" && !isdoc[k])
					fail("test_labels_prefixed", lineof(k, cp),
					     "bare label " w " in \"pairs with " substr(cl, 1, 60) "\"")
				c2 = substr(c2, RSTART + RLENGTH - 1)
			}
			if (own != "" && nl == 0)
				fail("test_labels_paired", lineof(k, cp),
				     own " pairs with \"" substr(cl, 1, 60) "\": name the partner by its label")
			off += ms + ml - 1; s = substr(s, ms + ml)
		}
		# Every other label mentioned is a reference too.
		s = flat; off = 0
		while (match(s, L)) {
			lab = substr(s, RSTART, RLENGTH)
			split(lab, pp, "-")
			if (pp[1] in pre)
				ref[lab] = ref[lab] " " lineof(k, off + RSTART)
			off += RSTART + RLENGTH - 1; s = substr(s, RSTART + RLENGTH)
		}
	}
	for (lab in ref)
		if (!(lab in def)) {
			split(ref[lab], where, " ")
			fail("test_labels_defined", where[1], lab " is named but defined nowhere")
		}
	for (lab in def) {
		split(def[lab], where, " ")
		if (!(lab in pw) && !(lab in named) && !(lab in nopartner))
			fail("test_labels_paired", where[1], lab " names no partner label and none names it")
	}
	for (x in pw) {
		n = split(pw[x], ys, " ")
		for (i = 1; i <= n; i++) {
			y = ys[i]
			if (!(y in pw))
				continue
			if (index(pw[y] " ", " " x " ") == 0) {
				split(def[x], where, " ")
				fail("test_labels_pairs_agree", where[1],
				     x " pairs with " y ", but " y " pairs only with" pw[y])
			}
		}
	}
	split("test_labels_prefixed test_labels_defined test_labels_paired test_labels_pairs_agree", tn, " ")
	rc = 0
	for (i = 1; i <= 4; i++) {
		printf "[ RUN      ] %s\n", tn[i]
		if (tn[i] in bad) {
			printf "%s", bad[tn[i]]
			printf "[  FAILED  ] %s\n", tn[i]; rc = 1
		} else {
			printf "[       OK ] %s\n", tn[i]
		}
	}
	n = 0
	for (lab in def) n++
	printf "%d labels defined in %d files\n", n, nfiles
	exit rc
}
'
