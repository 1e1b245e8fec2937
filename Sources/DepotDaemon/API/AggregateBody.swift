import DepotWire
import Foundation

struct AggregateBody: Decodable {
    var field: String?
    var functions: [String]?
    var groupBy: [String]?
    var `where`: String?
    var arguments: [String: JSONValue]?

    enum CodingKeys: String, CodingKey {
        case field, functions, groupBy = "group_by", `where`, arguments
    }
}
