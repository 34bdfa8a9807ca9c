/// Receives the callbacks of the actions it is registered for.
///
/// The router keeps a weak reference: an action whose delegate has gone away is unknown.
public protocol CallbackRouterDelegate: AnyObject, Sendable {
    /// Called on the routing thread, once per routed URL.
    func router(_ router: CallbackRouter, didReceive callback: Callback)
}
