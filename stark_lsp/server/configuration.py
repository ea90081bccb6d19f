"""The user's settings and API key as the server holds them (``initialize``, ``workspace/configuration``).

Settings arrive in ``initializationOptions``, then through
``workspace/configuration`` (pulled after ``initialized`` and after every
``workspace/didChangeConfiguration``); parsing them is ``settings.py``'s.
A command waits for a pull in flight (``ready``), so it runs with the
settings the user just changed. The API key comes only from
``initializationOptions`` or ``stark.setApiKey``: one found in a
configuration section is dropped.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from lsprotocol import types

from stark_lsp.server.settings import Secret, Settings, api_key_from, parse_settings

log = logging.getLogger(__name__)


class Configuration:
    def __init__(self, server: Any) -> None:
        self.server = server  # says what is wrong with a setting; asks the client for its configuration
        self.settings = Settings()
        self.api_key = Secret()
        self._pull: asyncio.Task | None = None

    def initialize(self, options: Any) -> None:
        """``initializationOptions``: settings, and maybe the API key."""
        self.apply(options)
        self.api_key = api_key_from(options) or self.api_key

    def changed(self, sent: Any) -> None:
        """``workspace/didChangeConfiguration``: the section sent with it, then a pull."""
        if isinstance(sent, dict) and isinstance(sent.get("stark"), dict):
            section = dict(sent["stark"])
            section.pop("apiKey", None)
            self.apply(section)
        self.start_pull()

    def apply(self, options: Any) -> None:
        self.settings, problems = parse_settings(options, self.settings)
        for p in problems:
            self.server.say(f"STARK settings: {p}", types.MessageType.Warning)

    def set_api_key(self, key: str) -> bool:
        """``stark.setApiKey``: the key, bound to the endpoint set now."""
        self.api_key = Secret(key, self.settings.base_url)
        return bool(self.api_key)

    def start_pull(self) -> None:
        self._pull = asyncio.get_running_loop().create_task(self.pull())

    async def ready(self) -> None:
        """Wait for a workspace/configuration answer in flight, so a command
        sent after a settings change runs with the new settings."""
        if self._pull is not None and not self._pull.done():
            await asyncio.wait([self._pull], timeout=5)

    async def pull(self) -> None:
        caps = self.server.client_capabilities.workspace
        if not (caps and caps.configuration):
            return
        try:
            result = await self.server.workspace_configuration_async(
                types.ConfigurationParams(items=[types.ConfigurationItem(section="stark")])
            )
        except Exception as e:
            log.info("workspace/configuration: %s", e)
            return
        if result and isinstance(result[0], dict):
            section = dict(result[0])
            section.pop("apiKey", None)  # may come from a workspace file: never a source of secrets
            self.apply(section)
