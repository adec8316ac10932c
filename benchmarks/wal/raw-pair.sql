\set k random(1, 2000000000)
INSERT INTO raw_wal (idempotency_key, status, request_hash, created_at, updated_at) VALUES ('new-1a2b3c4d-' || :k, 'started', sha256(:k::text::bytea), now(), now()) ON CONFLICT DO NOTHING;
UPDATE raw_wal SET status = 'completed', response_body = '\x7b226964223a2263685f31227d'::bytea, updated_at = now() WHERE idempotency_key = 'new-1a2b3c4d-' || :k;
