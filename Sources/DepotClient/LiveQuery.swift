import NIOHTTP1

/// What a live query has to say (DESIGN §13): it is loading, here is the
/// whole result, here is what changed in it, or it failed.
///
/// ```swift
/// for try await state in client.live(FetchRequest(store: "travel", entity: "Trip", where: "isFavorite == true")) {
///     switch state {
///     case .loading: showSpinner()
///     case .result(let records, _): show(records)
///     case .changes(let c): apply(c.inserted, c.updated, c.deleted)
///     case .failure(let error): showBanner(error.message)    // it goes on trying
///     }
/// }
/// ```
public enum LiveState: Sendable, Hashable {
    /// Waiting for the first result (or for a new one, after the history
    /// it would resume from was pruned).
    ///
    /// ```swift
    /// if case .loading = state { spinner.start() }
    /// ```
    case loading
    /// The whole result, and the history token it is current at.
    ///
    /// ```swift
    /// if case .result(let records, let token) = state { show(records); saved = token }
    /// ```
    case result([Record], token: String?)
    /// What changed in the result since the last state. After an outage
    /// it comes as soon as the query is connected again, empty when
    /// nothing changed meanwhile: the query is current again.
    ///
    /// ```swift
    /// if case .changes(let c) = state { apply(c) }
    /// ```
    case changes(LiveChanges)
    /// The daemon is unreachable, or refused the query. A daemon that is
    /// away or failing (``DepotClientError/isTransient``) is tried again; a
    /// refused query (an unknown field, a bad predicate) ends the sequence
    /// after this state.
    ///
    /// ```swift
    /// if case .failure(let error) = state, !error.isTransient { print("refused:", error.message) }
    /// ```
    case failure(DepotClientError)
}

/// The records that entered, changed in, or left a live query's result.
///
/// ```swift
/// var byID = Dictionary(uniqueKeysWithValues: records.map { ($0["id"]!, $0) })
/// for r in changes.inserted + changes.updated { byID[r["id"]!] = r }
/// for id in changes.deleted { byID[id] = nil }
/// ```
public struct LiveChanges: Sendable, Hashable {
    /// Records that now match and did not.
    ///
    /// ```swift
    /// for r in changes.inserted { rows[r["id"]!] = r }
    /// ```
    public var inserted: [Record]
    /// Records that match still, with new values.
    ///
    /// ```swift
    /// for r in changes.updated { rows[r["id"]!] = r }
    /// ```
    public var updated: [Record]
    /// Identifiers of records that no longer match (or were deleted).
    ///
    /// ```swift
    /// for id in changes.deleted { rows[id] = nil }
    /// ```
    public var deleted: [JSONValue]
    /// The history token the result is now current at.
    ///
    /// ```swift
    /// saved.token = changes.token     // resume from it next run: client.live(request, since:)
    /// ```
    public var token: String?
}

/// A live query: an `AsyncSequence` of ``LiveState``s that keeps a fetch's
/// result current. It reconnects by itself when the daemon goes away (after
/// 0.1 s, then twice as long each time, up to ``maximumDelay``), resumes
/// from its last token so that no change is missed or doubled, and fetches
/// the whole result again only when that token's history was pruned.
/// Leaving the loop, or cancelling its task, closes its connection.
///
/// ```swift
/// let live = client.live(FetchRequest(store: "travel", entity: "Trip", sort: ["-budget"], limit: 10))
/// for try await state in live { render(state) }
/// ```
public struct LiveQuery: AsyncSequence, Sendable {
    /// Each element is a state.
    ///
    /// ```swift
    /// for try await state: LiveState in client.live(request) { render(state) }
    /// ```
    public typealias Element = LiveState

    let client: DepotClient
    let request: FetchRequest
    /// A token to resume from, as if a result current at it had been delivered.
    let since: String?
    /// The longest wait between two attempts to reconnect, in seconds.
    ///
    /// ```swift
    /// var live = client.live(request)
    /// live.maximumDelay = 30
    /// ```
    public var maximumDelay: Double = 5

    /// The states, as they come.
    ///
    /// ```swift
    /// var states = client.live(request).makeAsyncIterator()
    /// let first = try await states.next()     // .loading
    /// ```
    public func makeAsyncIterator() -> AsyncThrowingStream<LiveState, any Error>.Iterator {
        states().makeAsyncIterator()
    }

    private func states() -> AsyncThrowingStream<LiveState, any Error> {
        let (stream, continuation) = AsyncThrowingStream<LiveState, any Error>.makeStream()
        // Unstructured: it feeds the stream returned here; the stream's termination cancels it.
        let task = Task { [client, request, since, maximumDelay] in
            var token = since
            var resuming = since != nil  // a result was delivered (or is held): connect with `since`
            var backoff = Backoff(maximum: maximumDelay)
            var failing = false  // a failure was reported for this outage
            var refetchNow = false  // the history after the token is gone: fetch again at once
            if since == nil { continuation.yield(.loading) }
            while !Task.isCancelled {
                var body = request.body()
                body.watch = true
                body.changes = true
                if resuming, let token { body.since = token }
                refetchNow = false
                do {
                    try await client.lines(
                        .POST, request.path("fetch"), body: .json(body),
                        onStatus: { status in
                            // Back after an outage, resuming: say so at once, with
                            // no change, rather than when the next change comes.
                            if status == 200, failing, resuming {
                                failing = false
                                continuation.yield(
                                    .changes(LiveChanges(inserted: [], updated: [], deleted: [], token: token)))
                            }
                        }
                    ) { line in
                        let event = try DepotClient.decode(JSONValue.self, Array(line.utf8), answering: "a live fetch")
                        backoff.reset()
                        failing = false
                        switch event["type"]?.string {
                        case "result":
                            token = event["token"]?.string
                            resuming = true
                            continuation.yield(.result(Self.records(event["records"]), token: token))
                        case "changes":
                            token = event["token"]?.string ?? token
                            continuation.yield(
                                .changes(
                                    LiveChanges(
                                        inserted: Self.records(event["inserted"]),
                                        updated: Self.records(event["updated"]),
                                        deleted: event["deleted"]?.array ?? [], token: token)))
                        case "history_expired":
                            // The changes since the token are gone: the whole result again.
                            resuming = false
                            refetchNow = true
                            continuation.yield(.loading)
                            return false
                        case "entity_dropped":
                            // The entity is gone: no later commit changes this result.
                            throw DepotClientError(
                                .unknownEntity, event["message"]?.string ?? "the live fetch's entity was dropped")
                        default:
                            throw DepotClientError(
                                .unexpectedAnswer, "a live fetch sent an event of no known type: \(line)")
                        }
                        return !Task.isCancelled
                    }
                    // The daemon ended the stream (it is stopping): reconnect.
                } catch let error as DepotClientError where error.isTransient {
                    if !failing {
                        failing = true
                        continuation.yield(.failure(error))
                    }
                } catch is CancellationError {
                    break
                } catch let error as DepotClientError {
                    continuation.yield(.failure(error))
                    continuation.finish()
                    return
                } catch {
                    if Task.isCancelled { break }
                    continuation.finish(throwing: error)
                    return
                }
                if Task.isCancelled { break }
                if refetchNow { continue }
                await backoff.wait()
            }
            continuation.finish()
        }
        continuation.onTermination = { _ in task.cancel() }
        return stream
    }

    static func records(_ value: JSONValue?) -> [Record] {
        (value?.array ?? []).compactMap { $0.object.map(Record.init) }
    }
}

extension DepotClient {
    /// A live query of `request`: its result, then what changes in it, for
    /// as long as the loop runs, across daemon restarts.
    ///
    /// ```swift
    /// for try await state in client.live(FetchRequest(store: "travel", entity: "Trip", where: "budget > 1000")) {
    ///     if case .changes(let c) = state { print("+\(c.inserted.count) ~\(c.updated.count) -\(c.deleted.count)") }
    /// }
    /// ```
    public func live(_ request: FetchRequest) -> LiveQuery {
        LiveQuery(client: self, request: request, since: nil)
    }

    /// A live query that resumes from `token`, for a program that kept the
    /// result and the token of an earlier run: first the changes after the
    /// token (none when there are none), then as they come. If that history
    /// was pruned, it says `.loading` and delivers the whole result again.
    ///
    /// ```swift
    /// for try await state in client.live(request, since: saved.token) { ... }
    /// ```
    public func live(_ request: FetchRequest, since token: String) -> LiveQuery {
        LiveQuery(client: self, request: request, since: token)
    }
}

extension DepotClient {
    /// The number of records a request selects, now and each time it
    /// changes, across daemon restarts (retried as ``LiveQuery`` is); a
    /// refused request ends it with its error. Cheap whatever the count:
    /// the daemon counts, the client holds a number.
    ///
    /// ```swift
    /// for try await n in client.liveCount(FetchRequest(store: "travel", entity: "Trip")) { print("\(n) trips") }
    /// ```
    public func liveCount(_ request: FetchRequest, maximumDelay: Double = 5) -> AsyncThrowingStream<Int, any Error> {
        let (stream, continuation) = AsyncThrowingStream<Int, any Error>.makeStream()
        // Unstructured: it feeds the stream returned here; the stream's termination cancels it.
        let task = Task { [self] in
            var body = request.body(result: "count")
            body.watch = true
            var backoff = Backoff(maximum: maximumDelay)
            var last: Int?
            while !Task.isCancelled {
                do {
                    try await lines(.POST, request.path("fetch"), body: .json(body)) { line in
                        let event = try Self.decode(JSONValue.self, Array(line.utf8), answering: "a live count")
                        guard let n = event["result"]?["count"]?.int else {
                            throw DepotClientError(.unexpectedAnswer, "a live count sent no count: \(line)")
                        }
                        backoff.reset()
                        // After a reconnection, only a count that moved.
                        if n != last { continuation.yield(n) }
                        last = n
                        return !Task.isCancelled
                    }
                } catch let error as DepotClientError where error.isTransient {
                    // Away or stopping: try again.
                } catch is CancellationError {
                    break
                } catch {
                    if Task.isCancelled { break }
                    continuation.finish(throwing: error)
                    return
                }
                if Task.isCancelled { break }
                await backoff.wait()
            }
            continuation.finish()
        }
        continuation.onTermination = { _ in task.cancel() }
        return stream
    }
}

/// The wait before trying to reach the daemon again: 0.1 s, twice as long
/// each time, up to `maximum` seconds; back to 0.1 s once it answers.
struct Backoff {
    let maximum: Double
    private var delay = 0.1

    init(maximum: Double) { self.maximum = maximum }

    mutating func reset() { delay = 0.1 }

    /// Waits the current delay (less if the task is cancelled), then doubles it.
    mutating func wait() async {
        try? await Task.sleep(for: .seconds(delay))
        delay = Swift.min(delay * 2, maximum)
    }
}
