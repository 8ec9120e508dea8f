#!/usr/bin/env python3
"""Writes corpora/database.sqlite: SQLite pages of a synthetic orders table.

Deterministic for a given SQLite library: a seeded generator, fixed page
size, no WAL, and VACUUM at the end so free pages do not depend on history.
The committed file's checksum is in corpora/manifest.toml; another SQLite
version may write different header bytes, so regenerate only to change it.
"""
import os
import random
import sqlite3
import sys

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "database.sqlite")
ROWS = 24000

rng = random.Random(20121012)
if os.path.exists(OUT):
    os.remove(OUT)
db = sqlite3.connect(OUT)
db.execute("PRAGMA page_size = 4096")
db.execute("PRAGMA journal_mode = DELETE")
db.execute(
    "CREATE TABLE orders (id INTEGER PRIMARY KEY, customer TEXT, email TEXT, status TEXT,"
    " amount_cents INTEGER, currency TEXT, created TEXT, note TEXT)"
)
db.execute("CREATE INDEX orders_customer ON orders(customer)")
first = ["ada", "alan", "grace", "edsger", "barbara", "donald", "ken", "dennis", "margaret", "john", "frances", "leslie"]
last = ["lovelace", "turing", "hopper", "dijkstra", "liskov", "knuth", "thompson", "ritchie", "hamilton", "backus"]
statuses = ["pending", "paid", "shipped", "delivered", "refunded", "cancelled"]
notes = ["", "", "", "gift wrap", "leave at door", "call before delivery", "fragile", "express"]
with db:
    for i in range(1, ROWS + 1):
        f, l = rng.choice(first), rng.choice(last)
        db.execute(
            "INSERT INTO orders VALUES (?,?,?,?,?,?,?,?)",
            (
                i,
                f"{f} {l}",
                f"{f}.{l}{rng.randrange(100)}@example.com",
                rng.choice(statuses),
                rng.randrange(100, 500000),
                rng.choice(["EUR", "USD", "GBP"]),
                f"2012-{rng.randrange(1, 13):02d}-{rng.randrange(1, 29):02d}T{rng.randrange(24):02d}:{rng.randrange(60):02d}:{rng.randrange(60):02d}Z",
                rng.choice(notes),
            ),
        )
db.execute("VACUUM")
db.close()
