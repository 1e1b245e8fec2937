import Foundation

/// A record as the API sends it: its fields by name.
public typealias RecordObject = [String: JSONValue]

/// A whole number of a request (`limit`, `offset`): from 0 up; anything
/// else is refused with the key named.
extension KeyedDecodingContainer {
    func decodeCount(forKey key: Key) throws -> Int? {
        guard contains(key), try !decodeNil(forKey: key) else { return nil }
        if let n = try? decode(Int.self, forKey: key), n >= 0 { return n }
        throw DecodingError.dataCorrupted(
            .init(codingPath: codingPath + [key], debugDescription: "must be a whole number from 0 to \(Int.max)"))
    }
}
