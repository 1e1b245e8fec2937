import DepotEngine
import DepotWire
import Foundation

/// The body of a fetch.
extension FetchBody {
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
            sort: (sort ?? []).map { DepotEngine.SortDescriptor(parsing: $0, nulls: nulls) }, limit: limit,
            offset: offset, fields: fields, sectionBy: sectionBy)
        descriptor.prefetch = prefetch ?? []
        descriptor.computed = (computed ?? []).map { ComputedField($0.name, $0.expression) }
        return descriptor
    }
}
