import DepotEngine
import DepotWire
import Foundation

/// The body of a fetch.
struct FetchBody: Decodable {
    var `where`: String?
    var arguments: [String: JSONValue]?
    var sort: [String]?
    var nulls: String?
    var limit: RequestCount?
    var offset: RequestCount?
    var fields: [String]?
    var sectionBy: String?
    /// Relationships whose records are embedded in each record (DESIGN §12).
    var prefetch: [String]?
    var result: String?
    var watch: Bool?
    /// With `watch`: stream what changed in the result instead of whole results.
    var changes: Bool?
    /// With `changes`: resume after this token, without a first result.
    var since: String?

    enum CodingKeys: String, CodingKey {
        case `where`, arguments, sort, nulls, limit, offset, fields, sectionBy = "section_by", prefetch, result, watch
        case changes, since
    }

    /// The engine's descriptor of this fetch.
    ///
    /// - Throws: ``APIError`` for a `nulls` that is neither first nor last.
    func descriptor(entity: String) throws -> FetchDescriptor {
        var nulls: DepotEngine.SortDescriptor.NullsOrder?
        if let n = self.nulls {
            guard let order = DepotEngine.SortDescriptor.NullsOrder(rawValue: n) else {
                throw APIError(.invalidArgument, "nulls must be first or last")
            }
            nulls = order
        }
        var descriptor = FetchDescriptor(
            entity: entity, where: self.where, arguments: try JSONValue.scalars(arguments, key: "arguments"),
            sort: (sort ?? []).map { DepotEngine.SortDescriptor(parsing: $0, nulls: nulls) }, limit: limit?.value,
            offset: offset?.value, fields: fields, sectionBy: sectionBy)
        descriptor.prefetch = prefetch ?? []
        return descriptor
    }
}
