/// An SQLite store is one backend of the daemon's store contract.
extension Store: StoreBackend {
    public nonisolated var location: String { configuration.path }
    public nonisolated var historyRetention: Duration? { configuration.historyRetention }
    public nonisolated var reads: any StoreReading { reader }

    public nonisolated var jobPollInterval: Duration? { nil }
    public nonisolated func requestCancel(_ id: String) async throws -> Bool { false }
    public nonisolated func claimableJobs() async throws -> [(id: String, record: [UInt8])] { [] }

    /// Only this host serves an SQLite store: the job runs at once.
    public nonisolated func runJob<T: Sendable>(_ id: String, _ body: @escaping @Sendable () async throws -> T)
        async throws -> T?
    {
        try await body()
    }

    public func importFile(_ request: ImportRequest, progress: @escaping @Sendable (ImportProgress) -> Void)
        async throws
        -> ImportProgress
    {
        try await Importer.run(request, into: self, progress: progress)
    }
}

extension StoreReader: StoreReading {
    public func resultFeed(_ descriptor: FetchDescriptor) throws -> ResultFeed {
        try ResultFeed(reader: self, descriptor)
    }
}
