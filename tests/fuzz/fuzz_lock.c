// SPDX-License-Identifier: MIT
/*
 * tests/fuzz/fuzz_lock.c: libFuzzer harness for the lock table's readers
 * (segment kind 228, an 8-slot layout, the FLOCK serializer so that no
 * lock state lives in the scribbled bytes). The input is repeated over the
 * whole body (table header and slots) of a live table, as a buggy or
 * hostile peer would write it while we hold it open; then:
 *   - lookup (serializer-free) of seeded keys and misses: 0, -ENOENT,
 *     -EAGAIN or -ORBIT_ECORRUPT only; a hit names the asked key, with
 *     lengths inside ORBIT_LOCK_BYTES_MAX and a slot index inside the table;
 *   - foreach: the count handed out, at most the slot count, in slot
 *     order, every entry's lengths valid (or -EAGAIN);
 *   - the table checker (0 or -ORBIT_ECORRUPT, with a NUL-terminated why);
 *   - holder_alive on what foreach saw (0, 1 or -EINVAL);
 *   - a fresh read-only open of the same bytes: 0 or -ORBIT_ECORRUPT;
 *   - the mutators (they read the slots too): try_acquire -> 0, -EBUSY or
 *     -ENOSPC; after a 0 a lookup of that key answers 0 with our owner and
 *     token, or -EAGAIN (a scribbled odd seq on its path); renew, release
 *     and force_release -> their documented codes;
 *   - the agent's dead-holder sweep (orbit__lock_free_dead, with a member
 *     directory of the fuzz fleet): a count >= 0 or -EAGAIN; scribbled
 *     flags and member words (rows out of range, garbage pids) are only
 *     ever proofs that fail or an entry freed, never a crash.
 * One seed entry carries ORBIT_LOCK_FREE_ON_DEATH (a member tenure set on
 * the handle by orbit__lock_set_member(), as an agent does).
 * The scribbled robust mutex of the FUTEX serializer is out of scope here
 * (a known limit, README "Caveats"); see doc/threat-model.md.
 */
#include "config.h"

#include <orbit/orbit.h>

#include "fuzz.h"
#include "shm/lock_internal.h"
#include "shm/members.h"

#define SLOTS 8u
/* header, slots, control bytes (one per slot, a cache line): orbit__lock_table_body_bytes(SLOTS) */
#define BODY_BYTES                                                                                 \
	(sizeof(struct orbit_lock_table_hdr) + SLOTS * sizeof(struct orbit_lock_slot) + 64u)

const char orbit_fuzz_name[] = "lock";
const size_t orbit_fuzz_max_len = BODY_BYTES;

static char fleet[64];
static struct orbit_lock_layout layout;
static orbit_lock_t *rw, *ro;
static orbit_members_t *members; /* the fuzz fleet's directory, for the sweep */
static uint8_t *body;		 /* rw's mapping, past the segment header */

static const struct {
	const char *ns, *label, *owner;
} keys[] = {
	{ "", "a", "me" }, { "jobs", "nightly-report", "worker-17" },
	{ "n", "x", "o" }, { "db", "shard-3", "host-a:4242" },
	{ "", "b", "me" },
};
#define NKEYS (sizeof(keys) / sizeof(keys[0]))

static orbit_lock_key_t key_of(unsigned i)
{
	orbit_lock_key_t k = { keys[i].ns, strlen(keys[i].ns), keys[i].label,
			       strlen(keys[i].label) };
	return k;
}

static struct orbit_lock_options opts(bool readonly)
{
	return fuzz_lock_opts(fleet, &layout, readonly);
}

static void cleanup(void)
{
	struct orbit_lock_options o = opts(false);

	orbit_lock_close(ro);
	orbit_lock_close(rw);
	orbit_lock_unlink(&o);
	orbit__members_close(members);
	orbit__members_unlink(fleet);
}

static void setup(void)
{
	struct orbit_lock_options o;

	fuzz_fleet(fleet, sizeof(fleet), "lk");
	layout = fuzz_lock_layout();
	FUZZ_SETUP(layout.slots != SLOTS || BODY_BYTES != orbit__lock_table_body_bytes(SLOTS));
	o = opts(false);
	orbit_lock_unlink(&o);
	FUZZ_SETUP(orbit_lock_open(&o, &rw));
	o = opts(true);
	FUZZ_SETUP(orbit_lock_open(&o, &ro));
	orbit__members_unlink(fleet);
	FUZZ_SETUP(orbit__members_open(&members, fleet, 0, NULL));
	atexit(cleanup);
	orbit__lock_set_member(rw, 3, 7); /* no such member: a dead tenure */
	body = (uint8_t *)orbit__lock_seg(rw)->base + ORBIT_SEG_HEADER_BYTES;
	/* Seeds: the bytes real mutators leave (entries, a tombstone, an expired one). */
	for (unsigned i = 0; i < NKEYS; i++) {
		orbit_lock_key_t k = key_of(i);
		orbit_lock_owner_t ow = { keys[i].owner, strlen(keys[i].owner) };

		struct orbit_lock_acquire_options ao = { .size = sizeof(ao),
							 .flags = i == 1 ? ORBIT_LOCK_FREE_ON_DEATH
									 : 0 };

		FUZZ_SETUP(orbit_lock_try_acquire_with(rw, &k, &ow, i == 2 ? 1 : 3600000000000ull,
						       &ao, NULL, NULL));
	}
	orbit_lock_key_t k = key_of(4);
	orbit_lock_owner_t ow = { keys[4].owner, strlen(keys[4].owner) };
	fuzz_dump_seed("lock-table-entries", body, BODY_BYTES);
	FUZZ_SETUP(orbit_lock_release(rw, &k, &ow, 0));
	fuzz_dump_seed("lock-table-tombstone", body, BODY_BYTES);
}

static void check_entry(const struct orbit_lock_entry *e)
{
	FUZZ_CHECK(e->label_len > 0 && e->owner_len > 0, "empty label or owner (%u, %u)",
		   e->label_len, e->owner_len);
	FUZZ_CHECK((unsigned)e->ns_len + e->label_len + e->owner_len <= ORBIT_LOCK_BYTES_MAX,
		   "lengths %u+%u+%u", e->ns_len, e->label_len, e->owner_len);
	FUZZ_CHECK(e->slot_idx < SLOTS, "slot index %u", e->slot_idx);
}

static void lookups(void)
{
	static const char *const miss[] = { "absent", "c", "nightly-report" };

	for (unsigned i = 0; i < NKEYS + 3; i++) {
		orbit_lock_key_t k = i < NKEYS ? key_of(i)
					       : (orbit_lock_key_t){ "", 0, miss[i - NKEYS],
								     strlen(miss[i - NKEYS]) };
		struct orbit_lock_entry e;
		int rc = orbit_lock_lookup(ro, &k, &e);

		FUZZ_CHECK(fuzz_rc_in(rc, 4, 0, -ENOENT, -EAGAIN, -ORBIT_ECORRUPT), "lookup %d",
			   rc);
		if (rc)
			continue;
		check_entry(&e);
		FUZZ_CHECK(e.ns_len == k.ns_len && e.label_len == k.label_len &&
			       !memcmp(e.bytes, k.ns, k.ns_len) &&
			       !memcmp(e.bytes + k.ns_len, k.label, k.label_len),
			   "lookup answered another key");
		FUZZ_CHECK(!e.expired, "lookup returned an expired entry");
	}
}

struct seen {
	int n;
	int last_idx;
	uint32_t pid[SLOTS];
};

static int on_entry(const struct orbit_lock_entry *e, void *ctx)
{
	struct seen *s = ctx;

	check_entry(e);
	FUZZ_CHECK((int)e->slot_idx > s->last_idx, "foreach out of slot order (%u after %d)",
		   e->slot_idx, s->last_idx);
	FUZZ_CHECK(s->n < (int)SLOTS, "foreach passed more entries than slots");
	s->last_idx = (int)e->slot_idx;
	s->pid[s->n++] = e->holder_pid;
	int alive = orbit_lock_holder_alive(e);
	FUZZ_CHECK(alive == 0 || alive == 1 || (alive == -EINVAL && !e->holder_pid),
		   "holder_alive %d", alive);
	return 0;
}

static void readers(void)
{
	struct seen s = { 0, -1, { 0 } };
	char why[160];
	int rc;

	lookups();
	rc = orbit_lock_foreach(ro, on_entry, &s);
	FUZZ_CHECK(rc == s.n || rc == -EAGAIN, "foreach returned %d after %d entries", rc, s.n);
	memset(why, 'x', sizeof(why));
	rc = orbit__lock_table_check(ro, why, sizeof(why));
	FUZZ_CHECK(rc == 0 || rc == -ORBIT_ECORRUPT, "table check %d", rc);
	FUZZ_CHECK(fuzz_nul_terminated(why, sizeof(why)), "why not terminated");
	(void)orbit_lock_state_revision(ro);
}

static void reopen(void)
{
	struct orbit_lock_options o = opts(true);
	orbit_lock_t *l = NULL;
	int rc = orbit_lock_open(&o, &l);

	FUZZ_CHECK(rc == 0 || rc == -ORBIT_ECORRUPT, "read-only open %d", rc);
	orbit_lock_close(l);
}

static void mutators(const uint8_t *data, size_t size)
{
	unsigned i = size ? data[0] % NKEYS : 0;
	orbit_lock_key_t k = key_of(i), other = key_of((i + 1) % NKEYS);
	orbit_lock_owner_t ow = { "fuzz-owner", 10 };
	struct orbit_lock_lease lease;
	struct orbit_lock_entry e, holder;
	int rc;

	rc = orbit_lock_try_acquire(rw, &k, &ow, 3600000000000ull, &lease, &holder);
	FUZZ_CHECK(fuzz_rc_in(rc, 3, 0, -EBUSY, -ENOSPC), "try_acquire %d", rc);
	if (rc == -EBUSY)
		check_entry(&holder);
	if (rc == 0) {
		rc = orbit_lock_lookup(rw, &k, &e);
		FUZZ_CHECK(rc == 0 || rc == -EAGAIN, "lookup after acquire %d", rc);
		if (rc == 0)
			FUZZ_CHECK(e.token == lease.token && e.owner_len == ow.len &&
				       !memcmp(orbit_lock_entry_owner(&e), ow.bytes, ow.len),
				   "lookup after acquire: not our lease");
		rc = orbit_lock_renew(rw, &k, &ow, lease.token, 1000000000ull, NULL);
		FUZZ_CHECK(rc == 0, "renew of our fresh lease %d", rc);
		rc = orbit_lock_release(rw, &k, &ow, lease.token);
		FUZZ_CHECK(rc == 0, "release of our fresh lease %d", rc);
	}
	rc = orbit_lock_release(rw, &other, &ow, 0);
	FUZZ_CHECK(fuzz_rc_in(rc, 3, 0, -ENOENT, -EPERM), "release %d", rc);
	rc = orbit_lock_force_release(rw, &other);
	FUZZ_CHECK(rc == 0 || rc == -ENOENT, "force_release %d", rc);
	rc = orbit__lock_free_dead(rw, members);
	FUZZ_CHECK(rc >= 0 || rc == -EAGAIN, "free_dead %d", rc);
	/* what the mutators left is again a table a reader must survive */
	lookups();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{

	fuzz_once(setup);
	fuzz_fill(body, BODY_BYTES, data, size, 0);
	readers();
	reopen();
	mutators(data, size);
	return 0;
}
