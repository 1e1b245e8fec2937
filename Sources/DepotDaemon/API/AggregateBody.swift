import Foundation

struct AggregateBody: Decodable {
    var field: String?
    var functions: [String]?
    var groupBy: [String]?
    var `where`: String?
    var arguments: [String: JSONScalar]?

    enum CodingKeys: String, CodingKey {
        case field, functions, groupBy = "group_by", `where`, arguments
    }
}
