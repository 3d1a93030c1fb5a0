// KernelIndex page behaviour. Everything works without it; it adds the CSRF header to
// htmx requests, copy buttons for citations, and keeps search boxes in step with the URL.
(function () {
  "use strict";

  function csrfToken() {
    var meta = document.querySelector('meta[name="csrf-token"]');
    return meta ? meta.getAttribute("content") : "";
  }

  document.addEventListener("htmx:configRequest", function (event) {
    var token = csrfToken();
    if (token) {
      event.detail.headers["X-CSRFToken"] = token;
    }
  });

  // Back and forward restore htmx's saved copy of a page, whose search boxes hold the value they
  // were rendered with, not the query of the restored URL: put that query back in them.
  function syncSearchBoxes() {
    var query = new URLSearchParams(window.location.search).get("q") || "";
    document.querySelectorAll('input[type="search"][name="q"]').forEach(function (input) {
      input.value = query;
    });
  }

  document.addEventListener("htmx:historyRestore", syncSearchBoxes);
  window.addEventListener("pageshow", function (event) {
    if (event.persisted) {
      syncSearchBoxes();
    }
  });

  document.addEventListener("click", function (event) {
    var button = event.target.closest("button[data-copy]");
    if (!button) {
      return;
    }
    var source = document.getElementById(button.getAttribute("data-copy"));
    if (!source || !navigator.clipboard) {
      return;
    }
    navigator.clipboard.writeText(source.textContent).then(function () {
      var label = button.textContent;
      button.textContent = "Copied";
      setTimeout(function () { button.textContent = label; }, 1500);
    });
  });
})();
