#!/usr/bin/env python3
"""Checks a factum store against its anchors without factum:
python3 verify_anchors.py STORE ANCHORS PUBLIC_KEY

ANCHORS is a file of anchors (JSON lines, as `factum anchor` writes them) and PUBLIC_KEY the
Ed25519 public key (PEM) that signed them. Follows docs/storage-format.md ("Anchors"): checks each
anchor's signature over its signed bytes, the chain of anchors (the first one's previous hash all
zero, each next one's the SHA-256 of the one before: its signed bytes, then its signature) and
positions that never go back (bad_anchor), then walks the store's hash chain as verify_chain.py
does, with each anchored head required at its position (behind_anchor, anchor_mismatch). A last
line without its newline is a write that never finished and is ignored. Exit status: 0 intact,
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


def check_anchors(anchors, key):
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
            raise verify_chain.Broken("bad_anchor", a["position"],
                                      f"{where}: its position is lower than the one before")
        previous = hashlib.sha256(signed_bytes(a) + a["signature"]).digest()
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
        check_anchors(anchors, key)
        db.execute("BEGIN")
        count, head = verify_chain.verify(db, None, [(a["position"], a["head"]) for a in anchors])
    except verify_chain.Broken as b:
        print(f"{b.problem} at position {b.position}: {b}")
        return 1
    print(f"ok: {count} events, head {head.hex()}; {len(anchors)} anchors hold")
    return 0


if __name__ == "__main__":
    verify_chain.run(main)
