public import DepotEngine

/// Entities shared by the tests and the child executables they run, so that
/// a child writes exactly the entity the test reads back.
public enum TestEntities {
    /// DESIGN §8's Trip with a `meta` JSON field; history of values, or of
    /// fields only.
    public static func trip(values: Bool = true) throws -> EntitySchema {
        try EntitySchema(
            name: "Trip",
            fields: [
                Field(name: "id", type: .string), Field(name: "name", type: .string),
                Field(name: "destination", type: .string, isOptional: true), Field(name: "startDate", type: .date),
                Field(name: "endDate", type: .date, isOptional: true), Field(name: "budget", type: .double),
                Field(name: "isFavorite", type: .bool), Field(name: "notes", type: .string, isOptional: true),
                Field(name: "meta", type: .json, isOptional: true)
            ],
            identifier: ["id"], indexes: [["destination"], ["startDate"]], preserveOnDelete: ["name"],
            history: values ? .values : .fields)
    }
}
