import Foundation
import HTTPTypes
import Hummingbird
@_spi(OutpostInternal) import OutpostCore

/// The changes an admin makes to a user: disable, enable, sign out everywhere, roles, quotas. Each
/// is written to the audit log with the admin as actor. An admin cannot disable themselves or take
/// their own admin role (they would lock themselves out).
extension AdminConsole {
    static let disableForm = "user.disable"
    static let enableForm = "user.enable"
    static let signOutEverywhereForm = "user.sign-out"
    static let addRoleForm = "user.role-add"
    static let removeRoleForm = "user.role-remove"
    static let quotasForm = "user.quotas"
    /// The longest quota value taken (`unlimited`, or 19 digits and a suffix).
    static let maxQuotaFieldLength = 32

    func addUserActions(to router: Router<OutpostRequestContext>) {
        let user = Self.usersPath + "/{id}"
        post(router, RouterPath(user + "/disable"), form: Self.disableForm) { visit, _ in try await disable(visit) }
        post(router, RouterPath(user + "/enable"), form: Self.enableForm) { visit, _ in try await enable(visit) }
        post(router, RouterPath(user + "/sign-out"), form: Self.signOutEverywhereForm) { visit, _ in
            try await signOutEverywhere(visit)
        }
        post(router, RouterPath(user + "/roles/add"), form: Self.addRoleForm) { visit, fields in
            try await addRole(visit, fields)
        }
        post(router, RouterPath(user + "/roles/remove"), form: Self.removeRoleForm) { visit, fields in
            try await removeRole(visit, fields)
        }
        post(router, RouterPath(user + "/quotas"), form: Self.quotasForm) { visit, fields in try await setQuotas(visit, fields) }
    }

    /// Runs `change` for the path's user with the storage's user administration; a 404 page when
    /// there is no such user, a 501 page for a storage without user administration.
    private func changing(
        _ visit: AdminVisit, _ change: (StoredUser, any UserAdminStorage) async throws -> Response
    ) async throws -> Response {
        guard let administration = userAdministration else { return unsupportedUsers(visit) }
        guard let user = try await pathUser(visit) else { return noSuchUser(visit) }
        return try await change(user, administration)
    }

    func disable(_ visit: AdminVisit) async throws -> Response {
        try await changing(visit) { user, administration in
            guard user.id != visit.admin.id else {
                return try await userPage(
                    visit, user, status: .badRequest,
                    error: "You cannot disable your own account: you would lock yourself out of the console. "
                        + "Another admin can disable it.")
            }
            guard try await administration.disableUser(id: user.id, now: AuthService.now()) else { return noSuchUser(visit) }
            await record(AuditAction.userDisabled, visit, subject: user.id)
            return seeOther(Self.userPath(user.id), notice: "\(user.username) is disabled and signed out everywhere.")
        }
    }

    func enable(_ visit: AdminVisit) async throws -> Response {
        try await changing(visit) { user, administration in
            guard try await administration.enableUser(id: user.id) else { return noSuchUser(visit) }
            await record(AuditAction.userEnabled, visit, subject: user.id)
            return seeOther(Self.userPath(user.id), notice: "\(user.username) may sign in again.")
        }
    }

    func signOutEverywhere(_ visit: AdminVisit) async throws -> Response {
        try await changing(visit) { user, administration in
            guard try await administration.signOutEverywhere(userID: user.id) else { return noSuchUser(visit) }
            await record(AuditAction.userSignedOut, visit, subject: user.id)
            return seeOther(Self.userPath(user.id), notice: "\(user.username) is signed out everywhere.")
        }
    }

    /// The form's `role`, trimmed; `nil` when it is not a role name.
    private static func role(in fields: [String: String]) -> String? {
        let role = (fields["role"] ?? "").trimmingCharacters(in: .whitespaces)
        return RoleName.isValid(role) ? role : nil
    }

    func addRole(_ visit: AdminVisit, _ fields: [String: String]) async throws -> Response {
        try await changing(visit) { user, _ in
            guard let role = Self.role(in: fields) else {
                return try await userPage(visit, user, status: .badRequest, error: RoleName.help + ".")
            }
            try await storage.addRole(role, userID: user.id)
            await record(AuditAction.userRolesChanged, visit, subject: user.id, detail: ["added": role])
            return seeOther(Self.userPath(user.id), notice: "\(user.username) has the role \(role).")
        }
    }

    func removeRole(_ visit: AdminVisit, _ fields: [String: String]) async throws -> Response {
        try await changing(visit) { user, _ in
            guard let role = Self.role(in: fields) else {
                return try await userPage(visit, user, status: .badRequest, error: RoleName.help + ".")
            }
            guard !(user.id == visit.admin.id && role == Self.role) else {
                return try await userPage(
                    visit, user, status: .badRequest,
                    error: "You cannot take your own \(Self.role) role: you would lock yourself out of the console. "
                        + "Another admin can take it.")
            }
            guard try await storage.removeRole(role, userID: user.id) else {
                return try await userPage(
                    visit, user, status: .badRequest, error: "\(user.username) does not have the role \(role).")
            }
            await record(AuditAction.userRolesChanged, visit, subject: user.id, detail: ["removed": role])
            return seeOther(Self.userPath(user.id), notice: "\(user.username) no longer has the role \(role).")
        }
    }

    func setQuotas(_ visit: AdminVisit, _ fields: [String: String]) async throws -> Response {
        try await changing(visit) { user, _ in
            guard let quotas = storage as? any QuotaStorage else { return unsupportedUsers(visit) }
            let current = try await quotas.quotaOverrides(user: user.id)
            var parsed: [String: QuotaBound] = [:]
            for row in Self.quotaBounds(current, Quotas()) {
                let text = (fields[row.field] ?? "").trimmingCharacters(in: .whitespaces)
                guard text.utf8.count <= Self.maxQuotaFieldLength, let bound = QuotaBound(parsing: text) else {
                    return try await userPage(
                        visit, user, status: .badRequest,
                        error: "\(row.label) takes \(QuotaBound.parsingHelp); “\(String(text.prefix(40)))” is none of them.")
                }
                parsed[row.field] = bound
            }
            var overrides = current
            overrides.records = parsed["records"] ?? current.records
            overrides.recordBytes = parsed["record_bytes"] ?? current.recordBytes
            overrides.fileBytes = parsed["file_bytes"] ?? current.fileBytes
            overrides.pendingUploads = parsed["pending_uploads"] ?? current.pendingUploads
            guard overrides != current else {
                return seeOther(Self.userPath(user.id), notice: "Nothing changed: the quotas were already these.")
            }
            try await quotas.setQuotaOverrides(overrides, user: user.id)
            var detail: [String: String] = [:]
            for (old, new) in zip(Self.quotaBounds(current, Quotas()), Self.quotaBounds(overrides, Quotas()))
            where old.own != new.own {
                detail[new.field] = new.own.text
            }
            await record(AuditAction.userQuotaChanged, visit, subject: user.id, detail: detail)
            return seeOther(Self.userPath(user.id), notice: "The quotas of \(user.username) are set.")
        }
    }
}
