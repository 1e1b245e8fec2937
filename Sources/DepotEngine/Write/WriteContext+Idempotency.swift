/// The answers kept under idempotency keys (DESIGN §16), written once over
/// the save's SQL (``SQLSession``): `depot_idempotency`. Saves of one key,
/// on any host, run one after the other (each backend's saves are serial:
/// SQLite's one writer, PostgreSQL's save lock).
extension WriteContext {
    /// The answer kept under idempotency key `key` since `since` (a
    /// timestamp), with the digest of its request; nil when none is.
    package func idempotentAnswer(_ key: String, since: String) async throws -> (digest: String, answer: String)? {
        guard
            let row = try await rows(
                """
                SELECT digest, answer FROM \(table: "depot_idempotency") \
                WHERE key = \(bind: key) AND created >= \(timestamp: since)
                """
            ).first, let digest = row[0].text, let answer = row[1].text
        else { return nil }
        return (digest, answer)
    }

    /// Keeps `answer` under idempotency key `key`, in this save's
    /// transaction, and forgets the keys kept before `forgetBefore`.
    package func keepIdempotentAnswer(_ key: String, digest: String, answer: String, forgetBefore: String) async throws
    {
        try await execute("DELETE FROM \(table: "depot_idempotency") WHERE created < \(timestamp: forgetBefore)")
        try await execute(
            """
            INSERT INTO \(table: "depot_idempotency")(key, digest, answer, created) \
            VALUES (\(bind: key), \(bind: digest), \(bind: answer), \(timestamp: Timestamp.now())) \
            ON CONFLICT (key) DO UPDATE SET digest = excluded.digest, answer = excluded.answer, \
            created = excluded.created
            """)
    }
}
