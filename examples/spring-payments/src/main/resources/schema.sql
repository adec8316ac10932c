CREATE TABLE IF NOT EXISTS wallet (
  id      text PRIMARY KEY,
  balance bigint NOT NULL CHECK (balance >= 0)
);

CREATE TABLE IF NOT EXISTS charge (
  id         text PRIMARY KEY,
  wallet_id  text NOT NULL REFERENCES wallet (id),
  amount     bigint NOT NULL CHECK (amount > 0),
  created_at timestamptz NOT NULL DEFAULT now()
);

-- Refunds: the saga's compensation of a charge (at most one per charge).
CREATE TABLE IF NOT EXISTS refund (
  charge_id  text PRIMARY KEY REFERENCES charge (id),
  amount     bigint NOT NULL CHECK (amount > 0),
  created_at timestamptz NOT NULL DEFAULT now()
);

-- The warehouse: stock on hand, and the reservations the order saga makes (one per reference).
CREATE TABLE IF NOT EXISTS stock (
  sku       text PRIMARY KEY,
  available integer NOT NULL CHECK (available >= 0)
);

CREATE TABLE IF NOT EXISTS reservation (
  id        text PRIMARY KEY,
  reference text NOT NULL UNIQUE,
  sku       text NOT NULL REFERENCES stock (sku),
  quantity  integer NOT NULL CHECK (quantity > 0),
  released  boolean NOT NULL DEFAULT false
);
