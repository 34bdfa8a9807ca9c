public import Foundation
public import OutpostCallbacks
@_spi(OutpostInternal) public import OutpostCore

extension PluginRegistry {
    /// Registers ``OAuthLoginProvider`` under `type`. `makeSession` gives each provider its
    /// ``OAuthSession`` (e.g. OutpostAuth's authenticator configured from the entry's configuration).
    public mutating func registerOAuthLoginProvider(
        type: String = OAuthLoginProvider.pluginType, notificationCenter: NotificationCenter = .default,
        makeSession: @escaping @Sendable (PluginBuildContext) throws -> any OAuthSession
    ) {
        register(type: type) { context in
            try OAuthLoginProvider(
                identifier: context.identifier, session: makeSession(context),
                configuration: .object(context.configuration.values),
                notificationCenter: notificationCenter)
        }
    }

    /// Registers ``EntitlementComplianceChecker`` under `type`, asking the server behind `client`.
    ///
    /// Configuration: `login_provider` (required: the identifier of the provider whose token is
    /// sent), `path` (default `/me`), `entitlements_key` (default `entitlements`), `cache_seconds` (default 30).
    public mutating func registerEntitlementCompliance(
        type: String = EntitlementComplianceChecker.pluginType, client: OutpostClient
    ) {
        register(type: type) { context in
            let configuration = context.configuration
            return EntitlementComplianceChecker(
                client: client, loginProvider: try context.loginProvider(named: "login_provider"),
                configuration: .init(
                    path: try configuration.string("path") ?? "/me",
                    entitlementsKey: try configuration.string("entitlements_key") ?? "entitlements",
                    cacheLifetime: try configuration.seconds("cache_seconds", default: .seconds(30))))
        }
    }

    /// Registers ``CallbackStartupHook`` under `type`, routing through `router`. No configuration.
    public mutating func registerCallbackStartupHook(type: String = CallbackStartupHook.pluginType, router: CallbackRouter) {
        register(type: type) { context in CallbackStartupHook(name: context.identifier, router: router) }
    }
}
