"""Page contexts: one module per page, each building the one dict its view renders or dumps.

A view asks its page module for a context; the template renders that dict and the JSON
twin dumps the very same dict through the page's schema (``app.page_schemas``), so the
two never disagree. Nothing outside this package builds a page context, and nothing here
builds manifests.

``lookup`` (404s), ``pagination``, ``titles`` (what pages call things) and ``links`` are
shared by the pages: ``run``, ``comparison``, ``family``, ``home``, ``search``, ``plugins``,
``api``, ``manifest``, ``community`` and ``moderation``.
"""
