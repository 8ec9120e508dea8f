#!/usr/bin/env python3
"""Writes corpora/access.log: a deterministic web-server access log
(combined log format) from a seeded generator."""
import os
import random
import sys

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "access.log")
LINES = 16000

rng = random.Random(5002)
paths = ["/", "/index.html", "/products", "/products/ssd-240", "/products/ssd-120", "/cart", "/checkout",
         "/api/v1/orders", "/api/v1/stock", "/static/app.js", "/static/style.css", "/images/logo.png", "/support/trim"]
agents = [
    "Mozilla/5.0 (Windows NT 6.1; WOW64; rv:16.0) Gecko/20100101 Firefox/16.0",
    "Mozilla/5.0 (Windows NT 6.1) AppleWebKit/537.4 (KHTML, like Gecko) Chrome/22.0.1229.94 Safari/537.4",
    "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
    "curl/7.27.0",
]
codes = [200] * 12 + [304] * 3 + [404, 500, 301]
t = 1349049600  # 2012-10-01T00:00:00Z
months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
with open(OUT, "w", newline="\n") as f:
    for _ in range(LINES):
        t += rng.randrange(0, 4)
        day, rem = divmod(t - 1349049600, 86400)
        h, rem = divmod(rem, 3600)
        m, s = divmod(rem, 60)
        ip = f"10.{rng.randrange(4)}.{rng.randrange(256)}.{rng.randrange(1, 255)}"
        method = "POST" if rng.random() < 0.1 else "GET"
        path = rng.choice(paths)
        if rng.random() < 0.3:
            path += f"?id={rng.randrange(100000)}"
        code = rng.choice(codes)
        size = 0 if code == 304 else rng.randrange(200, 60000)
        ref = "-" if rng.random() < 0.5 else "https://shop.example.com" + rng.choice(paths)
        f.write(f'{ip} - - [{day % 28 + 1:02d}/{months[9 + day // 28 % 3]}/2012:{h:02d}:{m:02d}:{s:02d} +0000] '
                f'"{method} {path} HTTP/1.1" {code} {size} "{ref}" "{rng.choice(agents)}"\n')
