// A small program on DepotClient (docs/swift-client.md), in two parts:
//
//   depot-client-example dashboard STORE [--updates N]
//       a live dashboard of the store's counts, one line per entity each
//       time a count changes (after N updates it stops; without, it runs on);
//   depot-client-example consumer STORE NAME [--transactions N]
//       a consumer that follows the store's history from where it left off,
//       prints each transaction and acknowledges it (N transactions, or on).
//
// The socket comes from --socket, else $DEPOT_SOCKET, else /run/depot/depot.sock.

import DepotClient
#if canImport(Glibc)
import Glibc
#endif

/// Writes a line at once, also into a pipe (`print` buffers there).
func say(_ line: String) {
    var text = line + "\n"
    text.withUTF8 { _ = write(1, $0.baseAddress, $0.count) }
}

@main
struct Example {
    static func main() async {
        var arguments = Array(CommandLine.arguments.dropFirst())
        func option(_ name: String) -> String? {
            guard let i = arguments.firstIndex(of: name), i + 1 < arguments.count else { return nil }
            defer { arguments.removeSubrange(i...(i + 1)) }
            return arguments[i + 1]
        }
        let client = DepotClient(socketPath: option("--socket"))
        let limit = (option("--updates") ?? option("--transactions")).flatMap { Int($0) } ?? .max
        do {
            switch (arguments.first, arguments.count) {
            case ("dashboard", 2): try await dashboard(client, store: arguments[1], updates: limit)
            case ("consumer", 3): try await consumer(client, store: arguments[1], name: arguments[2], transactions: limit)
            default:
                say("usage: depot-client-example dashboard STORE [--updates N] | consumer STORE NAME [--transactions N]")
                exit(2)
            }
        } catch let error as DepotClientError {
            say("depot-client-example: \(error.message) (\(error.code))")
            exit(1)
        } catch {
            say("depot-client-example: \(error)")
            exit(1)
        }
    }

    /// One live count per entity, merged: a line `Entity count` for each change.
    static func dashboard(_ client: DepotClient, store: String, updates: Int) async throws {
        let entities = try await client.store(store).entities.map(\.name)
        await withThrowingTaskGroup(of: Void.self) { group in
            let (changes, sink) = AsyncStream<(String, Int)>.makeStream()
            for entity in entities {
                group.addTask {
                    for try await count in client.liveCount(FetchRequest(store: store, entity: entity)) {
                        sink.yield((entity, count))
                    }
                }
            }
            var shown = 0
            for await (entity, count) in changes {
                say("\(entity) \(count)")
                shown += 1
                if shown == updates { break }
            }
            group.cancelAll()
        }
    }

    /// Reads after the consumer's token, handles each transaction, acknowledges it.
    static func consumer(_ client: DepotClient, store: String, name: String, transactions: Int) async throws {
        var token: String
        if let existing = try await client.consumers(store: store).first(where: { $0.name == name }) {
            token = existing.token
        } else {
            token = try await client.createConsumer(name, store: store, from: .beginning).token
        }
        var handled = 0
        for try await t in client.followHistory(store: store, after: token) {
            let kinds = Dictionary(grouping: t.changes, by: \.kind).mapValues(\.count)
            say("\(t.token) \(t.author): \(kinds[.insert] ?? 0) inserted, \(kinds[.update] ?? 0) updated, "
                + "\(kinds[.delete] ?? 0) deleted")
            token = try await client.acknowledge(name, store: store, token: t.token).token
            handled += 1
            if handled == transactions { break }
        }
    }
}
