import OutpostServer

extension OutpostServer {
    /// A server for the benchmarks, which write records without signing in: every type allows
    /// anonymous creates by rule, and records without an owner may be changed by anyone. A fresh
    /// `outpost serve` refuses anonymous writes.
    static func bench(configuration: ServerConfiguration, plugins: [any ServerPlugin] = []) throws -> OutpostServer {
        var configuration = configuration
        configuration.accessRules = try AccessRuleSet([
            "*": [
                "create": "true",
                "update": "record.owner == null || record.owner == caller.user",
                "delete": "record.owner == null || record.owner == caller.user",
            ]
        ])
        return try OutpostServer(configuration: configuration, plugins: plugins)
    }
}
