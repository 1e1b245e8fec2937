import DepotEngine

/// The body of `POST /v1/jobs`: the kind, the store and the kind's settings
/// (``JobSpec``), read in one pass.
struct JobSubmission: Decodable {
    var store: String
    var spec: JobSpec

    enum Key: String, CodingKey { case kind, store }

    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: Key.self)
        let kindText = try c.decode(String.self, forKey: .kind)
        guard let kind = JobRecord.Kind(rawValue: kindText) else {
            throw DepotError(
                .invalidArgument,
                "kind must be one of "
                    + JobRecord.Kind.allCases.map(\.rawValue).joined(separator: ", ")
                    + ", not \(JSONText.quoted(kindText))")
        }
        store = try c.decode(String.self, forKey: .store)
        spec = try JobSpec(kind: kind, from: decoder)
    }
}
