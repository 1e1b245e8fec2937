/// A count in a request body (`limit`, `offset`): a whole number from 0 up,
/// read with its range checked.
///
/// Foundation's decoder reports `1e300` or `1.5` for an `Int` as "not valid
/// JSON" for the whole body; this says which key holds what, e.g.
/// `"limit" must be a whole number from 0 to 9223372036854775807`.
struct RequestCount: Decodable, Sendable, Hashable {
    var value: Int

    init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        if let i = try? c.decode(Int.self), i >= 0 {
            value = i
            return
        }
        throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath,
                                                debugDescription: "must be a whole number from 0 to \(Int.max)"))
    }
}
