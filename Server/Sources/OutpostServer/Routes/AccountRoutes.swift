import Hummingbird

/// `DELETE /me`: the signed-in user deletes their account (``AccountDeleter``).
///
/// The token needs `profile` and `records:write` (the legacy `records` grants it): deleting the
/// account removes the profile and every record. A valid access token is enough, with no password
/// or fresh sign-in: users who sign in through a provider have no password, and the server keeps no
/// time of sign-in for every grant; access tokens live minutes (``AuthConfiguration``), and the app
/// asks the person to confirm before it sends the request. A body is ignored.
struct AccountRoutes: Sendable {
    let auth: AuthService
    let deleter: AccountDeleter

    func add(to router: Router<OutpostRequestContext>) {
        let signedIn = router.group().add(middleware: AuthenticationMiddleware(auth: auth))
            .add(middleware: RequireCallerMiddleware(scope: Scope.profile))
        signedIn.delete("/me") { _, context in
            let caller = try context.requireCaller()
            try caller.require(Scope.recordsWrite)
            guard let userID = caller.userID else {
                throw ServerError(
                    .forbidden, code: "no_user",
                    message: "This access token belongs to a client, not a user; there is no account to delete")
            }
            guard let removal = try await deleter.delete(userID: userID) else {
                // A concurrent request deleted it first: this token died with it.
                throw AccountDeleted.error
            }
            await auth.audit.record(
                AuditEvent.userDeleted(
                    removal.removal, files: removal.files, actor: userID, clientAddress: context.clientAddress,
                    clientID: caller.clientID))
            return Response(status: .noContent, headers: [.cacheControl: "no-store"])
        }
    }
}
