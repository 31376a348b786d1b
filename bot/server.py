"""One ASGI application for every surface: Slack events, the Discourse webhook, the web page.

Why one app: a deployment runs the same image behind one load balancer; each surface is a set
of routes enabled by its settings (Slack when SLACK_SIGNING_SECRET is set, Discourse when
DISCOURSE_URL is set). Surfaces contribute routes through a `*_routes(settings, store)`
function in their own module; this module only assembles them.
"""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.routing import BaseRoute

from bot.settings import Settings
from bot.store import Store


def create_app(settings: Settings | None = None, store: Store | None = None) -> Starlette:
    settings = settings or Settings.from_env()
    store = store or Store(settings.database_url)
    routes: list[BaseRoute] = []
    if settings.slack_enabled:
        from bot.slack import slack_routes

        routes += slack_routes(settings, store)
    if settings.discourse_enabled:
        from bot.discourse import discourse_routes

        routes += discourse_routes(settings, store)
    app = Starlette(routes=routes)
    app.state.settings = settings
    app.state.store = store
    return app
