extension OutpostError.Code {
    /// The operation needs an entity's identifier and the entity has none: push it first.
    public static let missingIdentity = OutpostError.Code(rawValue: "missingIdentity")
}
