#!/usr/bin/env python3
"""Checks a factum store against its anchors without factum:
python3 verify_anchors.py STORE ANCHORS PUBLIC_KEY

ANCHORS is a file of anchors (JSON lines, as `factum anchor` writes them) and PUBLIC_KEY the
Ed25519 public key (PEM) that signed them. Follows docs/storage-format.md ("Anchors"): checks each
anchor's signature over its signed bytes, the chain of anchors (the first one's previous hash all
zero, each next one's the SHA-256 of the one before: its signed bytes, then its signature) and
positions that never go back (bad_anchor), then walks the store's hash chain as verify_chain.py
does, with each anchored head required at its position (behind_anchor, anchor_mismatch). A last
line without its newline is a write that never finished and is ignored. A rollback accepted in
the log (events of type factum.RollbackAccepted in the stream factum-anchors, storage-format.md
"Accepted rollbacks") lets the anchors up to the accepted one go unheld, and the next anchor go
back, once a later anchor covers the acceptance; each one is printed. Exit status: 0 intact,
1 broken, 2 unusable input. Needs python3-cryptography (Debian) beside the standard library.
"""
import hashlib
import json
import os
import re
import sys

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import load_pem_public_key

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import verify_chain  # noqa: E402  (beside this file)

FIELDS = {"anchor", "position", "head", "time_ms", "previous", "signature"}
HEX = {"head": 32, "previous": 32, "signature": 64}


def strict_object(pairs):
    """A JSON object as factum reads one: no field twice."""
    names = [name for name, _ in pairs]
    if len(set(names)) != len(names):
        raise ValueError("a field appears twice")
    return dict(pairs)


def parse_anchor(line):
    """Parses a line as factum does (anchor_json.cpp): ASCII without escapes, exactly FIELDS,
    integers that are JSON integers, hex fields of exactly their length."""
    text = line.decode("ascii")  # raises UnicodeDecodeError (a ValueError) on other bytes
    if "\\" in text:
        raise ValueError("a string holds an escape")
    o = json.loads(text, object_pairs_hook=strict_object)
    if not isinstance(o, dict) or set(o) != FIELDS:
        raise ValueError("not the fields of an anchor")
    for name in ("anchor", "position", "time_ms"):
        if type(o[name]) is not int or not -2**63 <= o[name] < 2**63:
            raise ValueError(f"{name} is not a 64-bit integer")
    if o["anchor"] != 1 or o["position"] < 0:
        raise ValueError("not an anchor of format 1")
    a = {"position": o["position"], "time_ms": o["time_ms"]}
    for name, size in HEX.items():
        if not isinstance(o[name], str) or not re.fullmatch(f"[0-9a-fA-F]{{{2 * size}}}", o[name]):
            raise ValueError(f"{name} is not {2 * size} hexadecimal digits")
        a[name] = bytes.fromhex(o[name])
    return a


def signed_bytes(a):
    return (f"factum-anchor-v1\nposition {a['position']}\nhead {a['head'].hex()}\n"
            f"time_ms {a['time_ms']}\nprevious {a['previous'].hex()}\n").encode()


def read_anchors(path):
    with open(path, "rb") as f:
        text = f.read()
    lines = text.split(b"\n")
    lines.pop()  # after the last newline: empty, or a torn line that never counted
    anchors = []
    for number, line in enumerate(lines, 1):
        try:
            anchors.append(parse_anchor(line))
        except (ValueError, TypeError, KeyError, RecursionError) as e:
            raise verify_chain.Broken("bad_anchor", 0, f"line {number} of {path}: {e}")
    return anchors


def anchor_hash(a):
    return hashlib.sha256(signed_bytes(a) + a["signature"]).digest()


def read_acceptances(db):
    """The accepted rollbacks of the log, oldest first: (position, anchor hash, anchored
    position). An event
    whose payload is not an acceptance grants nothing and is passed over, as factum does."""
    rows = db.execute(
        "SELECT e.position, e.payload FROM events e JOIN streams s ON s.stream_key = "
        "e.stream_key WHERE s.stream_id = 'factum-anchors' AND e.type = 'factum.RollbackAccepted' "
        "ORDER BY e.position").fetchall()
    out = []
    for position, payload in rows:
        try:
            text = bytes(payload).decode("ascii")
            if "\\" in text:
                continue
            o = json.loads(text, object_pairs_hook=strict_object)
        except (ValueError, TypeError, RecursionError):
            continue
        if (not isinstance(o, dict) or set(o) != {"rollback", "anchor", "anchor_position"}
                or type(o["rollback"]) is not int or o["rollback"] != 1
                or type(o["anchor_position"]) is not int or not 0 <= o["anchor_position"] < 2**63
                or not isinstance(o["anchor"], str)
                or not re.fullmatch("[0-9a-fA-F]{64}", o["anchor"])):
            continue
        out.append((position, bytes.fromhex(o["anchor"]), o["anchor_position"]))
    return out


def covered(anchors, i, acceptances):
    """The acceptance of anchors[i] that a later anchor covers, or None."""
    h = anchor_hash(anchors[i])
    for acceptance in acceptances:
        if acceptance[1] == h and any(b["position"] >= acceptance[0] for b in anchors[i + 1:]):
            return acceptance
    return None


def check_anchors(anchors, key, acceptances=()):
    previous = bytes(32)
    last_position = 0
    for i, a in enumerate(anchors, 1):
        where = f"anchor {i} (position {a['position']})"
        try:
            key.verify(a["signature"], signed_bytes(a))
        except InvalidSignature:
            raise verify_chain.Broken("bad_anchor", a["position"],
                                      f"{where}: its signature is not the public key's")
        if (a["position"] == 0) != (a["head"] == bytes(32)):
            raise verify_chain.Broken("bad_anchor", a["position"],
                                      f"{where}: only an empty log's anchor has an all-zero head")
        if a["previous"] != previous:
            raise verify_chain.Broken("bad_anchor", a["position"], f"{where}: it does not follow "
                                      "the anchor before it (or anchors before it are missing)")
        if a["position"] < last_position:
            accepted = covered(anchors, i - 2, acceptances)
            if accepted is None or a["position"] < accepted[0]:
                raise verify_chain.Broken("bad_anchor", a["position"],
                                          f"{where}: its position is lower than the one before, "
                                          "without an accepted rollback it covers")
        previous = anchor_hash(a)
        last_position = a["position"]


def main(argv):
    if len(argv) != 4:
        raise SystemExit(__doc__.splitlines()[1])
    try:
        with open(argv[3], "rb") as f:
            key = load_pem_public_key(f.read())
    except (OSError, ValueError) as e:
        raise SystemExit(f"{argv[3]}: not a PEM public key ({e})")
    if not isinstance(key, Ed25519PublicKey):
        raise SystemExit(f"{argv[3]}: not an Ed25519 public key")
    db = verify_chain.open_store(argv[1])
    try:
        try:
            anchors = read_anchors(argv[2])
        except OSError as e:
            raise SystemExit(f"{argv[2]}: cannot be read ({e})")
        db.execute("BEGIN")
        acceptances = read_acceptances(db)
        check_anchors(anchors, key, acceptances)
        count, head = verify_chain.verify(db, None, held_anchors(db, anchors, acceptances))
    except verify_chain.Broken as b:
        print(f"{b.problem} at position {b.position}: {b}")
        return 1
    print(f"ok: {count} events, head {head.hex()}; {len(anchors)} anchors hold")
    for position, _, anchor_position in acceptances:
        print(f"accepted rollback at position {position}: the anchor of position "
              f"{anchor_position} is no longer held")
    return 0


def held_anchors(db, anchors, acceptances):
    """The anchored heads the log must hold: all, but those up to the last covered acceptance
    that it no longer holds."""
    accepted_up_to = max((i + 1 for i in range(len(anchors)) if covered(anchors, i, acceptances)),
                         default=0)
    end = db.execute("SELECT coalesce(max(position), 0) FROM events").fetchone()[0]
    heads = []
    for i, a in enumerate(anchors):
        if i < accepted_up_to:
            row = db.execute("SELECT hash FROM events WHERE position = ?",
                             (a["position"],)).fetchone()
            held = a["position"] == 0 or (a["position"] <= end and row is not None
                                          and bytes(row[0]) == a["head"])
            if not held:
                continue
        heads.append((a["position"], a["head"]))
    return heads


if __name__ == "__main__":
    verify_chain.run(main)
