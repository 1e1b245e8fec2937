#!/usr/bin/env python3
"""Deterministic generator of the shop of DESIGN §12 for bench/relationships.

usage: python3 gen-shop.py ORDERS [--seed S] [--out-dir DIR]

Writes customers.csv (ORDERS/10 customers: id, name, country, a fifth with
no country), orders.csv (id, total, placed, customer: about one in eight
with no customer, the rest naming a customer that exists) and lines.csv
(order, line, sku, qty, price: 0 to 5 lines per order).
"""
import argparse
import csv
import os
import random

COUNTRIES = ["FR", "DE", "IT", "ES", "NL", "PL", "SE", "PT", "BE", ""]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("orders", type=int)
    parser.add_argument("--seed", type=int, default=12)
    parser.add_argument("--out-dir", default=".")
    args = parser.parse_args()
    r = random.Random(args.seed)
    os.makedirs(args.out_dir, exist_ok=True)
    customers = max(1, args.orders // 10)
    with open(os.path.join(args.out_dir, "customers.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["id", "name", "country"])
        for i in range(customers):
            w.writerow([f"C{i}", f"Customer {i}", r.choice(COUNTRIES)])
    with open(os.path.join(args.out_dir, "orders.csv"), "w", newline="") as o, \
            open(os.path.join(args.out_dir, "lines.csv"), "w", newline="") as l:
        wo, wl = csv.writer(o), csv.writer(l)
        wo.writerow(["id", "total", "placed", "customer"])
        wl.writerow(["order", "line", "sku", "qty", "price"])
        for i in range(args.orders):
            customer = "" if r.randrange(8) == 0 else f"C{r.randrange(customers)}"
            wo.writerow([f"O{i}", f"{r.randrange(100000) / 100:.2f}",
                         f"2025-{1 + r.randrange(12):02d}-{1 + r.randrange(28):02d}", customer])
            for n in range(r.randrange(6)):
                wl.writerow([f"O{i}", n + 1, f"SKU-{r.randrange(500)}", 1 + r.randrange(9), f"{r.randrange(10000) / 100:.2f}"])


if __name__ == "__main__":
    main()
