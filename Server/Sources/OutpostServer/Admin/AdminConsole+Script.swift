import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// `/admin/console.js`: the console's one script, for pages that opt in (`script: true`, which adds
/// `script-src 'self'` to their policy). It follows the live changes page: every
/// ``AdminConsole/scriptPollSeconds`` seconds, while the tab is visible, it asks
/// `/admin/changes/feed` (same origin, the session cookie) for changes after the newest shown and
/// puts them at the top of the table, built with DOM calls (never HTML from the answer), keeping at
/// most ``AdminConsole/scriptMaxRows`` rows; the `aria-live` status says how many came. It stops
/// polling while the tab is hidden, after ``AdminConsole/scriptMaxPolls`` polls, and at the first
/// failure (a sign-out, a restart): the page's "Show newer" link still works.
extension AdminConsole {
    static let scriptPollSeconds = 2
    static let scriptMaxRows = 200
    static let scriptMaxPolls = 1800

    static let scriptText = """
        (function () {
          "use strict";
          var table = document.getElementById("changes");
          var rows = document.getElementById("changes-rows");
          var status = document.getElementById("live-status");
          if (!table || !rows || !status) { return; }
          var feed = table.getAttribute("data-feed");
          var after = table.getAttribute("data-after") || "0";
          var polls = 0, timer = null, stopped = false;
          status.textContent = "Live: new changes appear at the top while this tab is visible.";
          function cell(row, text, code) {
            var td = document.createElement("td");
            var inner = code ? document.createElement(code) : td;
            inner.textContent = text;
            if (code) { td.appendChild(inner); }
            row.appendChild(td);
            return td;
          }
          function add(change) {
            var row = document.createElement("tr");
            cell(row, String(change.position));
            var td = document.createElement("td");
            var time = document.createElement("time");
            time.setAttribute("datetime", change.time);
            time.textContent = change.time.replace("T", " ").replace("Z", " UTC");
            td.appendChild(time);
            row.appendChild(td);
            cell(row, change.change);
            cell(row, change.type);
            cell(row, change.id, "code");
            var owner = document.createElement("td");
            if (change.owner) {
              var link = document.createElement("a");
              link.href = "/admin/users/" + encodeURIComponent(change.owner);
              link.textContent = change.owner_name || change.owner;
              owner.appendChild(link);
            } else {
              var none = document.createElement("span");
              none.className = "muted";
              none.textContent = "none";
              owner.appendChild(none);
            }
            row.appendChild(owner);
            cell(row, String(change.version));
            rows.insertBefore(row, rows.firstChild);
          }
          function stop(message) {
            stopped = true;
            if (timer !== null) { clearTimeout(timer); timer = null; }
            status.textContent = message;
          }
          function schedule() {
            if (stopped || timer !== null || document.hidden) { return; }
            if (polls >= \(scriptMaxPolls)) { stop("Live updates paused; use Show newer."); return; }
            timer = setTimeout(poll, \(scriptPollSeconds * 1000));
          }
          function poll() {
            timer = null;
            polls += 1;
            var url = feed + (feed.indexOf("?") < 0 ? "?" : "&") + "after=" + encodeURIComponent(after);
            fetch(url, { credentials: "same-origin", cache: "no-store", redirect: "error", headers: { "Accept": "application/json" } })
              .then(function (response) {
                if (!response.ok) { throw new Error("status " + response.status); }
                return response.json();
              })
              .then(function (answer) {
                var changes = answer.changes || [];
                changes.forEach(add);
                while (rows.children.length > \(scriptMaxRows)) { rows.removeChild(rows.lastChild); }
                after = String(answer.after);
                if (changes.length > 0) {
                  var empty = document.getElementById("changes-empty");
                  if (empty) { empty.remove(); }
                  status.textContent = changes.length + (changes.length === 1 ? " new change." : " new changes.");
                }
                schedule();
              })
              .catch(function () { stop("Live updates stopped; use Show newer."); });
          }
          document.addEventListener("visibilitychange", function () {
            if (document.hidden) {
              if (timer !== null) { clearTimeout(timer); timer = null; }
            } else {
              schedule();
            }
          });
          schedule();
        })();

        """

    /// The script's answer: JavaScript, revalidated on every load, never sniffed or framed.
    static var script: Response {
        Response(
            status: .ok,
            headers: [
                .contentType: "text/javascript; charset=utf-8", .cacheControl: "no-cache", .xContentTypeOptions: "nosniff",
            ],
            body: ResponseBody(byteBuffer: ByteBuffer(string: scriptText)))
    }
}
