// KernelIndex page behaviour. Everything works without it; it adds the CSRF header to
// htmx requests, swaps in the refusals that carry a message, copy buttons for citations, keeps
// search boxes in step with the URL and keeps the reader's place (focus, typing, history) across
// swaps. The Content-Security-Policy allows no inline script: page behaviour belongs here.
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
  // (the swap's target, an ancestor, or the alert slot the answer retargets to) shows those
  // answers, which carry a message for the reader.
  function swapRegion(event) {
    var retarget = event.detail.xhr.getResponseHeader("HX-Retarget");
    return (retarget && document.querySelector(retarget)) || event.detail.target;
  }

  document.addEventListener("htmx:beforeSwap", function (event) {
    var region = swapRegion(event);
    var box = region && region.closest("[data-swap-statuses]");
    if (!box) {
      return;
    }
    var statuses = box.getAttribute("data-swap-statuses").split(",");
    if (statuses.indexOf(String(event.detail.xhr.status)) !== -1) {
      event.detail.shouldSwap = true;
      event.detail.isError = false;
    }
  });

  // Back and forward restore htmx's saved copy of a page (or the browser's), whose search boxes
  // hold the value they were rendered with, not the query of the restored URL: put that query
  // back in every one. A live search moves the address on too: the other boxes (the header's)
  // follow it, the one being typed in is left alone.
  function syncSearchBoxes(exceptTyping) {
    var query = new URLSearchParams(window.location.search).get("q") || "";
    document.querySelectorAll('input[type="search"][name="q"]').forEach(function (input) {
      if (!(exceptTyping && input === document.activeElement)) {
        input.value = query;
      }
    });
  }

  function syncAllSearchBoxes() { syncSearchBoxes(false); }
  function syncOtherSearchBoxes() { syncSearchBoxes(true); }

  document.addEventListener("htmx:historyRestore", syncAllSearchBoxes);
  window.addEventListener("pageshow", syncAllSearchBoxes);
  document.addEventListener("htmx:pushedIntoHistory", syncOtherSearchBoxes);
  document.addEventListener("htmx:replacedInHistory", syncOtherSearchBoxes);

  // Refusals and one-time notices ("cleared", "posted") answer an action, not an address: a page
  // saved to history leaves them out, so that Back shows what a reload of its address shows.
  document.addEventListener("htmx:beforeHistorySave", function () {
    document.querySelectorAll("[data-transient]").forEach(function (message) { message.remove(); });
  });

  // While an input method composes a word, its partial forms are not searched for (each would
  // push an address); the composed word is.
  document.addEventListener("input", function (event) {
    if (event.isComposing && event.target.matches('input[type="search"]')) {
      event.stopPropagation();
    }
  }, true);
  document.addEventListener("compositionend", function (event) {
    if (event.target.matches('input[type="search"]')) {
      event.target.dispatchEvent(new Event("input", {bubbles: true}));
    }
  });

  // A swap that would push the address already shown (Enter on a query the live search has just
  // shown) replaces it instead, so that Back leaves that search rather than showing it twice.
  document.addEventListener("htmx:beforeHistoryUpdate", function (event) {
    var history = event.detail.history;
    if (history.type === "push" && new URL(history.path, window.location.href).href === window.location.href) {
      history.type = "replace";
    }
  });

  // What a swap is about to replace: the search box being typed in (its value may have run ahead
  // of the query the answer was made for) and whether focus was inside the swapped region.
  var swapping = null;

  // Swaps of an element marked data-background (a poll) are nobody's action: they move no focus
  // and clear no alert.
  function requester(event) {  // the element whose request this is (detail.elt is where the event fires)
    return event.detail.requestConfig ? event.detail.requestConfig.elt : null;
  }

  function inBackground(event) {
    var source = requester(event);
    return Boolean(source && source.hasAttribute("data-background"));
  }

  document.addEventListener("htmx:beforeSwap", function (event) {
    var target = swapRegion(event);
    if (!event.detail.shouldSwap || !target || inBackground(event)) {
      return;
    }
    var active = document.activeElement;
    swapping = {
      target: target,
      targetId: target.id,
      heldFocus: Boolean(active && active !== document.body && target.contains(active)),
      typing: active && active.matches('input[type="search"][id]') && target.contains(active) ?
        {id: active.id, value: active.value, start: active.selectionStart, end: active.selectionEnd} : null
    };
  });

  // Once the new content is live: a search box that replaced the one being typed in (and holds
  // the value it was rendered with) takes back what was typed while the answer was on its way,
  // and searches for it; a search page moved in (from the home page) announces its count, as a
  // later search would. A swap that replaced the element holding focus (a pager link, a form's
  // button) would leave focus on the body, and the next Tab would start again at the top of the
  // page: the swapped region takes it instead (htmx itself refocuses an element that kept its id).
  document.addEventListener("htmx:afterSettle", function () {
    var swapped = swapping;
    swapping = null;
    var typing = swapped && swapped.typing;
    var box = typing && document.getElementById(typing.id);
    if (box && box.value === box.defaultValue && box.value !== typing.value) {
      box.value = typing.value;
      box.setSelectionRange(typing.start, typing.end);
      box.dispatchEvent(new Event("input", {bubbles: true}));
    }
    var status = document.getElementById("search-status");
    var count = document.querySelector("#search-results .result-count");
    if (swapped && swapped.targetId === "content" && status && count && !status.textContent) {
      setTimeout(function () { status.textContent = count.textContent; }, 100);  // a change, not new content
    }
    if (!swapped || !swapped.heldFocus || (document.activeElement && document.activeElement !== document.body)) {
      return;
    }
    var region = swapped.target.isConnected ? swapped.target :
      swapped.targetId ? document.getElementById(swapped.targetId) : null;
    if (region) {
      if (!region.hasAttribute("tabindex")) {
        region.setAttribute("tabindex", "-1");
      }
      region.focus();
    }
  });

  // A refusal shown in an alert slot (a form's: too many posts, a body too large; or the page's,
  // atop <main>: a refused search or filter) answers a newer action than the field errors and
  // notices near it, which it did not check: they go, a refused filter's selects show again what
  // the page shows, and the slot is scrolled into view. The next answer that is no refusal (and
  // no poll's) clears the page's slot.
  document.addEventListener("htmx:afterSwap", function (event) {
    var slot = event.detail.target;
    var pageAlert = document.getElementById("page-alert");
    if (inBackground(event)) {
      return;
    }
    if (pageAlert && slot !== pageAlert && event.detail.xhr && event.detail.xhr.status < 400) {
      pageAlert.replaceChildren();
    }
    if (!slot || !(slot === pageAlert || slot.classList.contains("form-alert"))) {
      return;
    }
    var source = requester(event);
    var form = source && source.closest("form");
    if (slot === pageAlert && form) {  // a refused filter: its selects go back to what the page shows
      form.querySelectorAll("option").forEach(function (option) { option.selected = option.defaultSelected; });
    }
    if (slot !== pageAlert) {
      var section = slot.parentElement;
      section.querySelectorAll(".field-error, [data-transient][role=status]").forEach(function (stale) {
        stale.remove();
      });
      section.querySelectorAll("[aria-invalid]").forEach(function (field) {
        field.removeAttribute("aria-invalid");
        field.removeAttribute("aria-describedby");
      });
    }
    slot.scrollIntoView({block: "nearest"});
  });

  // An answer htmx does not swap (a server error, a status no region lists) or no answer at all (the network down)
  // left the page as it was, silently, a filter naming a choice the page does not show: the alert slot of the form
  // sent (or the page's) says so, and a filter form's selects show again what the page shows. The next answer that
  // is swapped clears it, as it clears a refusal. Polls fail quietly: they try again.
  function showFailure(event, message) {
    var source = requester(event) || event.target;
    if (inBackground(event) || !source || !source.closest) {
      return;
    }
    var box = source.closest("[data-swap-statuses]");
    var pageAlert = document.getElementById("page-alert");
    var slot = (box && box.querySelector(".form-alert")) || pageAlert;
    if (!slot) {
      return;
    }
    var text = document.createElement("p");
    text.className = "form-error";
    text.setAttribute("data-transient", "");
    text.textContent = message;
    slot.replaceChildren(text);
    var form = source.closest("form");
    if (slot === pageAlert && form) {
      form.querySelectorAll("option").forEach(function (option) { option.selected = option.defaultSelected; });
    }
    slot.scrollIntoView({block: "nearest"});
  }

  document.addEventListener("htmx:responseError", function (event) {
    var xhr = event.detail.xhr;
    showFailure(event, "KernelIndex could not answer (" + xhr.status + (xhr.statusText ? " " + xhr.statusText : "") +
      "): the page still shows what it showed before. Try again in a moment.");
  });

  document.addEventListener("htmx:sendError", function (event) {
    showFailure(event, "KernelIndex could not be reached: the page still shows what it showed before. " +
      "Check the connection and try again.");
  });

  // A copy button puts the text of the element its data-copy names on the clipboard and says so for a moment. A
  // browser that refuses (no permission; no clipboard at all outside a secure context) gets the text selected
  // instead, for the reader to copy. The label said is kept once, so a second click meanwhile restores it too.
  var COPY_NOTICE_MS = 1500;
  var SELECTED_NOTICE_MS = 4000;

  function sayOnButton(button, message, milliseconds) {
    if (!button.hasAttribute("data-label")) {
      button.setAttribute("data-label", button.textContent);
    }
    button.textContent = message;
    clearTimeout(button.copyNoticeTimer);
    button.copyNoticeTimer = setTimeout(function () {
      button.textContent = button.getAttribute("data-label");
    }, milliseconds);
  }

  function selectForCopying(button, source) {
    var range = document.createRange();
    range.selectNodeContents(source);
    var selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
    sayOnButton(button, "Selected: press Ctrl+C (\u2318C on a Mac) to copy", SELECTED_NOTICE_MS);
  }

  document.addEventListener("click", function (event) {
    var button = event.target.closest("button[data-copy]");
    if (!button) {
      return;
    }
    var source = document.getElementById(button.getAttribute("data-copy"));
    if (!source) {
      return;
    }
    if (!navigator.clipboard) {
      selectForCopying(button, source);
      return;
    }
    navigator.clipboard.writeText(source.textContent).then(function () {
      sayOnButton(button, "Copied", COPY_NOTICE_MS);
    }, function () {
      selectForCopying(button, source);
    });
  });
})();
