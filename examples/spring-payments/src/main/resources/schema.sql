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
