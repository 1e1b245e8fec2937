import DepotEngine

/// The body of `POST .../consumers` and `POST .../consumers/{name}/reset`:
/// the name (on create) and where to start (`now`, the default, `beginning`
/// or a token).
struct ConsumerBody: Decodable {
    var name: String?
    var from: String?

    /// Where the consumer starts.
    func start() throws -> Consumer.Start {
        try Consumer.Start.parse(from ?? "now")
    }
}

/// The body of `POST .../consumers/{name}/ack`.
struct AckBody: Decodable {
    var token: String
}
