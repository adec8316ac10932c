-- request_key is the Idempotency-Key attempt's downstream key: an order is inserted once per
-- key, even by a re-run after a crash (the filter's lease passed before the answer was stored).
CREATE TABLE IF NOT EXISTS orders (
  id          TEXT PRIMARY KEY,
  request_key TEXT NOT NULL UNIQUE,
  customer    TEXT NOT NULL,
  sku         TEXT NOT NULL,
  quantity    INTEGER NOT NULL CHECK (quantity > 0),
  total       INTEGER NOT NULL
);

-- Store credit, spent before the card: cents per customer.
CREATE TABLE IF NOT EXISTS store_credit (
  customer TEXT PRIMARY KEY,
  balance  INTEGER NOT NULL CHECK (balance >= 0)
);

INSERT OR IGNORE INTO store_credit (customer, balance) VALUES ('alice', 5000);
