// KernelIndex page behaviour. Everything works without it; it adds the CSRF header to
// htmx requests, swaps in the refusals that carry a message, copy buttons for citations, and
// keeps search boxes in step with the URL. The Content-Security-Policy allows no inline script:
// page behaviour belongs here.
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

  // htmx leaves 4xx answers unswapped; an element listing statuses in data-swap-statuses
  // (its own or its alert's swap) shows those answers, which carry a message for the reader.
  document.addEventListener("htmx:beforeSwap", function (event) {
    var box = event.target.closest("[data-swap-statuses]");
    if (!box) {
      return;
    }
    var statuses = box.getAttribute("data-swap-statuses").split(",");
    if (statuses.indexOf(String(event.detail.xhr.status)) !== -1) {
      event.detail.shouldSwap = true;
      event.detail.isError = false;
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
