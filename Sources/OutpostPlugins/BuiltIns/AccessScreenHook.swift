@_spi(OutpostInternal) public import OutpostCore

/// A screen hook that lets only signed-in users, or users who meet some policies, see a screen;
/// a signed-out user is asked to sign in.
///
/// - Without a compliance checker: a signed-in user passes (`{"signed_in": true}` is added to the
///   data); a signed-out one is asked to sign in with the login provider.
/// - With one: a user who meets the policies passes (`{"compliant": true}` is added; free content
///   passes without sign-in); a signed-out user is asked to sign in and checked again; a signed-in
///   user who does not meet them is denied (``PluginError/Code/denied``).
///
/// The policies are the configured ones, overridden key by key by an object under `policies` in the
/// data dictionary (so the app can pass the item's own, e.g. `{"policies": {"free": true}}`).
///
/// Configuration:
///
/// | key | type | default | meaning |
/// | --- | --- | --- | --- |
/// | `login_provider` | string | required | identifier of the login provider to sign in with |
/// | `compliance` | string | none | identifier of a compliance checker |
/// | `policies` | object | `{}` | the policies to check |
/// | `reason` | string | none | why sign-in is needed, for the sign-in screen |
/// | `flow_blocker` | bool | `true` | a failure keeps the screen from being shown |
/// | `stages` | [string] | `["beforePresentation"]` | `beforePresentation` and/or `postLaunch` |
/// | `recurring` | bool | `false` | run at every post-launch, not once per showing |
public struct AccessScreenHook: ScreenHook {
    /// The plugin type the registry knows it by.
    public static let pluginType = "outpost.hook.access"

    public let name: String
    /// The provider to check and sign in with.
    public let loginProvider: any LoginProvider
    /// The compliance checker, if any.
    public let compliance: (any UserCompliance)?
    /// The configured policies.
    public let policies: [String: JSONValue]
    /// Why sign-in is needed.
    public let reason: String?
    public let isFlowBlocker: Bool
    public let stages: Set<ScreenHookStage>
    public let isRecurring: Bool

    /// Creates a hook.
    public init(
        name: String, loginProvider: any LoginProvider, compliance: (any UserCompliance)? = nil,
        policies: [String: JSONValue] = [:], reason: String? = nil, isFlowBlocker: Bool = true,
        stages: Set<ScreenHookStage> = [.beforePresentation], isRecurring: Bool = false
    ) {
        self.name = name
        self.loginProvider = loginProvider
        self.compliance = compliance
        self.policies = policies
        self.reason = reason
        self.isFlowBlocker = isFlowBlocker
        self.stages = stages
        self.isRecurring = isRecurring
    }

    /// Creates a hook from a manifest entry; see the type's documentation for the configuration.
    public init(_ context: PluginBuildContext) throws(PluginError) {
        let configuration = context.configuration
        var stages: Set<ScreenHookStage> = []
        for stage in try configuration.strings("stages") ?? [ScreenHookStage.beforePresentation.rawValue] {
            guard let known = ScreenHookStage(rawValue: stage) else {
                throw PluginError(
                    .invalidConfiguration, "Unknown stage '\(stage)' in the configuration of plugin '\(context.identifier)'",
                    suggestion: "Use \(ScreenHookStage.allCases.map { "\"\($0.rawValue)\"" }.joined(separator: " or "))",
                    plugin: context.identifier, location: "configuration.stages")
            }
            stages.insert(known)
        }
        self.init(
            name: context.identifier, loginProvider: try context.loginProvider(named: "login_provider"),
            compliance: try context.compliance(named: "compliance"), policies: try configuration.object("policies") ?? [:],
            reason: try configuration.string("reason"), isFlowBlocker: try configuration.bool("flow_blocker", default: true),
            stages: stages, isRecurring: try configuration.bool("recurring", default: false))
    }

    public func evaluate(_ context: ScreenHookContext) async throws -> ScreenHookDecision {
        let signIn = ScreenHookDecision.requireSignIn(LoginRequest(provider: loginProvider.identifier, reason: reason))
        guard let compliance else {
            return loginProvider.isAuthenticated ? .proceed(adding: ["signed_in": true]) : signIn
        }
        let policies = self.policies.merging(context.data["policies"]?.objectValue ?? [:]) { _, new in new }
        let compliant: Bool = try await compliance.isCompliant(policies: policies)
        if compliant { return .proceed(adding: ["compliant": true]) }
        guard loginProvider.isAuthenticated else { return signIn }
        throw PluginError(
            .denied,
            "Screen hook '\(name)' denied screen '\(context.screen)': the signed-in user does not meet its policies \(JSONValue.object(policies))",
            hook: name, screen: context.screen)
    }
}
