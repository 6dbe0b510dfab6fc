#!/usr/bin/env python3
"""Checks the hash chain of a factum store without factum: python3 verify_chain.py FILE [HEAD_HEX]

Follows docs/storage-format.md and reports as EventStore::verify does: the first position where
the chain breaks (malformed_row, position_gap, hash_mismatch), a cut-off tail (truncated: the
AUTOINCREMENT counter in sqlite_sequence is past the last event), a row the chain does not cover
(unchained_row: an event below position 1, or a stream without events) or, when HEAD_HEX (a head
hash kept from earlier) is given and does not occur in the chain, head_mismatch. Reads the whole
check in one read transaction. Exit status: 0 intact, 1 broken, 2 not a factum store of format 1
or 2. Needs only the standard library.
"""
import hashlib
import sqlite3
import struct
import sys

APPLICATION_ID = 0x4643544D  # "FCTM"
FORMAT_VERSIONS = (1, 2)  # 2 adds the insert guards (triggers); the chain is the same
COLUMNS = ["e.position", "s.stream_id", "e.stream_version", "e.event_id", "e.type",
           "e.schema_version", "e.payload", "e.correlation_id", "e.causation_id",
           "e.compensates", "e.actor", "e.extra", "e.recorded_at", "e.hash"]


class Broken(Exception):
    def __init__(self, problem, position, message):
        super().__init__(message)
        self.problem, self.position = problem, position


def u32(n):
    return struct.pack(">I", n)


def string(b):
    return u32(len(b)) + b


def optional_id(value, typ):
    if typ == "null":
        return b"\x00"
    if typ != "blob" or len(value) != 16:
        raise ValueError("a metadata event id is not 16 bytes")
    return b"\x01" + value


def values_encoding(extra, typ):
    """The hash's encoding of metadata key/values: the `extra` blob itself, checked canonical."""
    if typ == "null":
        return u32(0)
    if typ != "blob":
        raise ValueError("its metadata key/values are malformed")
    if len(extra) < 4:
        raise ValueError("its metadata key/values are malformed")
    rest, last_key = extra[4:], None
    for _ in range(struct.unpack(">I", extra[:4])[0]):
        items = []
        for _ in range(2):  # key, then value
            if len(rest) < 4 or struct.unpack(">I", rest[:4])[0] > len(rest) - 4:
                raise ValueError("its metadata key/values are malformed")
            size = struct.unpack(">I", rest[:4])[0]
            items.append(rest[4:4 + size])
            rest = rest[4 + size:]
        if last_key is not None and items[0] <= last_key:  # sorted bytewise, unique
            raise ValueError("its metadata key/values are malformed")
        last_key = items[0]
    if rest:
        raise ValueError("its metadata key/values are malformed")
    return bytes(extra)


def chain_input(previous, row, types):
    """The bytes hashed for one event (docs/storage-format.md, "The hash chain")."""
    pos, stream, ver, eid, etype, schema, payload, corr, caus, comp, actor, extra, at, _ = row
    t = dict(zip(["pos", "stream", "ver", "id", "type", "schema", "payload", "corr", "caus",
                  "comp", "actor", "extra", "at", "hash"], types))
    if t["pos"] != "integer" or pos <= 0:
        raise ValueError("its position is not a positive integer")
    if t["stream"] != "text":
        raise ValueError("its stream id is missing")
    if t["ver"] != "integer" or ver <= 0:
        raise ValueError("its stream version is not a positive integer")
    if t["id"] != "blob" or len(eid) != 16:
        raise ValueError("its event id is not 16 bytes")
    if t["type"] != "text":
        raise ValueError("its type is not text")
    if t["schema"] != "integer" or not 0 <= schema <= 0xFFFFFFFF:
        raise ValueError("its schema version is not a 32-bit unsigned integer")
    if t["payload"] != "blob":
        raise ValueError("its payload is not a blob")
    ids = b"".join(optional_id(v, ty) for v, ty in ((corr, t["corr"]), (caus, t["caus"]),
                                                    (comp, t["comp"])))
    if t["actor"] not in ("null", "text"):
        raise ValueError("its actor is not text")
    values = values_encoding(extra, t["extra"])
    if t["at"] != "integer":
        raise ValueError("its recorded-at time is not an integer")
    if t["hash"] != "blob" or len(row[13]) != 32:
        raise ValueError("its hash is not 32 bytes")
    return (previous + struct.pack(">Q", pos) + string(stream) + struct.pack(">Q", ver) + eid
            + string(etype) + u32(schema) + string(payload) + ids + string(actor or b"")
            + values + struct.pack(">q", at))


def open_store(path):
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    db.text_factory = bytes  # hash the stored bytes of text columns, whatever they are
    app_id = db.execute("PRAGMA application_id").fetchone()[0] & 0xFFFFFFFF
    version = db.execute("PRAGMA user_version").fetchone()[0]
    if app_id != APPLICATION_ID:
        raise SystemExit(f"{path}: not a factum store (application_id {app_id:#010x})")
    if version not in FORMAT_VERSIONS:
        raise SystemExit(f"{path}: storage format {version}; this script reads formats 1 and 2")
    return db


def verify(db, expected_head=None, anchored=()):
    """Walks the chain; `anchored` lists (position, head hash) pairs the log must still hold
    (the anchors of docs/verify_anchors.py): behind_anchor, anchor_mismatch."""
    anchored = [(p, h) for p, h in anchored if p > 0]
    highest_anchored = max((p for p, _ in anchored), default=0)
    heads_at = {}
    for p, h in anchored:
        heads_at.setdefault(p, []).append(h)
    sql = ("SELECT " + ", ".join(COLUMNS) + ", " + ", ".join(f"typeof({c})" for c in COLUMNS)
           + ", s.category FROM events e LEFT JOIN streams s ON s.stream_key = e.stream_key"
           + " ORDER BY e.position")
    previous, expected_pos = bytes(32), 1
    seen_head = expected_head is None or expected_head == bytes(32)
    rows, lowest = db.execute("SELECT count(*), min(position) FROM events").fetchone()
    if rows and lowest < 1:
        raise Broken("unchained_row", 1, f"an event row at position {lowest} lies outside the "
                     "chain (positions start at 1): it was inserted behind the library's back")
    for full in db.execute(sql):
        row, types, category = full[:14], [t.decode() for t in full[14:28]], full[28]
        try:
            data = chain_input(previous, row, types)
        except ValueError as e:
            raise Broken("malformed_row", row[0], f"the event at position {row[0]} is malformed: {e}")
        if isinstance(category, int):
            category = str(category).encode()  # as SQLite reads an integer as text
        if category != row[1].split(b"-", 1)[0]:
            text = lambda b: b.decode("utf-8", "backslashreplace") if isinstance(b, bytes) else b
            raise Broken("malformed_row", row[0], f"the event at position {row[0]} belongs to "
                         f"stream '{text(row[1])}', whose recorded category '{text(category)}' "
                         f"is not '{text(row[1].split(b'-', 1)[0])}'")
        if row[0] != expected_pos:
            raise Broken("position_gap", expected_pos,
                         f"events at positions {expected_pos} to {row[0] - 1} are missing (deleted)")
        if hashlib.sha256(data).digest() != row[13]:
            raise Broken("hash_mismatch", row[0], f"the hash of the event at position {row[0]} "
                         "does not match its contents and the previous event's hash")
        for head in heads_at.get(row[0], ()):
            if head != row[13]:
                raise Broken("anchor_mismatch", row[0], f"the event at position {row[0]} has hash "
                             f"{row[13].hex()}, but an anchor signed hash {head.hex()} there: the "
                             "log was rewritten after it was anchored")
        previous, expected_pos = row[13], expected_pos + 1
        seen_head = seen_head or previous == expected_head
    if highest_anchored >= expected_pos:
        raise Broken("behind_anchor", expected_pos, f"the log ends at position {expected_pos - 1}, "
                     f"behind an anchor of position {highest_anchored}: anchored events are gone")
    sequence = db.execute("SELECT seq FROM sqlite_sequence WHERE name = 'events'").fetchone()
    if sequence is not None and sequence[0] >= expected_pos:
        raise Broken("truncated", expected_pos, f"the log ends at position {expected_pos - 1} but "
                     f"positions up to {sequence[0]} were written: events were removed from its end")
    if rows != expected_pos - 1:
        raise Broken("unchained_row", expected_pos, f"the events table holds {rows} rows but the "
                     f"chain {expected_pos - 1}: rows were inserted behind the library's back")
    if not seen_head:
        raise Broken("head_mismatch", expected_pos, f"the expected head hash is not in the chain "
                     f"(it ends at position {expected_pos - 1}): the log was cut off or rewritten")
    empty = db.execute("SELECT stream_id FROM streams s WHERE NOT EXISTS (SELECT 1 FROM events e "
                       "WHERE e.stream_key = s.stream_key) LIMIT 1").fetchone()
    if empty is not None:
        name = empty[0].decode("utf-8", "backslashreplace") if isinstance(empty[0], bytes) else empty[0]
        raise Broken("unchained_row", 0, f"the stream '{name}' has no events: its row was "
                     "inserted behind the library's back")
    return expected_pos - 1, previous


def main(argv):
    if len(argv) not in (2, 3):
        raise SystemExit(__doc__.splitlines()[0])
    db = open_store(argv[1])
    try:
        db.execute("BEGIN")  # one snapshot for the whole check, however many appends run
        count, head = verify(db, bytes.fromhex(argv[2]) if len(argv) == 3 else None)
    except Broken as b:
        print(f"{b.problem} at position {b.position}: {b}")
        return 1
    print(f"ok: {count} events, head {head.hex()}")
    return 0


def run(main_function):
    """Runs main_function(sys.argv) as a script: its result is the exit status; a SystemExit
    with a message (unusable input) prints it on stderr and exits 2."""
    try:
        sys.exit(main_function(sys.argv))
    except SystemExit as e:
        if isinstance(e.code, str):
            print(e.code, file=sys.stderr)
            sys.exit(2)
        raise


if __name__ == "__main__":
    run(main)
