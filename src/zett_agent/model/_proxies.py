"""Which proxy a model call goes through: the environment's rules as httpx 0.28 reads them.

httpx turns its environment proxies off as soon as a transport is passed to a
client, so zett's own pool (:mod:`zett_agent.model._pool`) reads them itself, with
the same rules:

* ``HTTP_PROXY``, ``HTTPS_PROXY`` and ``ALL_PROXY`` (lower-case names too, and they
  win over upper-case ones: :func:`urllib.request.getproxies`) give the proxy for
  ``http://`` URLs, ``https://`` URLs and both; a value without a scheme is
  ``http://``. The most specific rule wins (a port, then the longest host, then a
  scheme over ``all``), so ``HTTPS_PROXY`` wins over ``ALL_PROXY`` for https.
* ``NO_PROXY`` is a comma-separated list: ``*`` turns every proxy off; ``localhost``,
  an IPv4 or IPv6 address is that host exactly; ``example.com`` is that domain and
  its subdomains, ``.example.com`` its subdomains only; ``host:port`` limits a rule
  to one port; an entry with ``://`` is a URL pattern of its own. **A CIDR range
  (``10.0.0.0/8``) is not matched as a range** (httpx does not either): it is read as
  the one address before the slash. List the hosts.
* An explicit ``proxy=`` replaces the environment, ``NO_PROXY`` included (as
  ``httpx.AsyncClient(proxy=...)``); ``trust_env=False`` ignores the environment.

A proxy URL may carry credentials (``http://user:secret@proxy:3128``): they are sent
only to the proxy (``Proxy-Authorization``), and :func:`redacted` is the only form
of a proxy URL that zett prints or puts in an error.
"""

from __future__ import annotations

import ipaddress
import re
import urllib.request
from dataclasses import dataclass

import httpx

__all__ = ["ProxyRoutes", "redacted"]


@dataclass(frozen=True, slots=True)
class _Rule:
    """One URL pattern (httpx's ``"scheme://host:port"`` mount key form) and its proxy."""

    key: str
    scheme: str  # "" for all
    host: re.Pattern[str] | None
    host_text: str
    port: int | None
    proxy: httpx.URL | None  # None: go direct

    @classmethod
    def make(cls, key: str, proxy: httpx.URL | None) -> _Rule:
        url = httpx.URL(key)
        scheme = "" if url.scheme == "all" else url.scheme
        host = "" if url.host == "*" else url.host
        if not host:
            regex = None
        elif host.startswith("*."):
            regex = re.compile(r"^.+\." + re.escape(host[2:]) + "$")
        elif host.startswith("*"):
            regex = re.compile(r"^(.+\.)?" + re.escape(host[1:]) + "$")
        else:
            regex = re.compile("^" + re.escape(host) + "$")
        return cls(key, scheme, regex, host, url.port, proxy)

    @property
    def rank(self) -> tuple[int, int, int]:
        return (0 if self.port is not None else 1, -len(self.host_text), -len(self.scheme))

    def matches(self, url: httpx.URL) -> bool:
        return (
            (not self.scheme or self.scheme == url.scheme)
            and (self.host is None or self.host.match(url.host) is not None)
            and (self.port is None or self.port == url.port)
        )


def _address(text: str, version: type[ipaddress.IPv4Address | ipaddress.IPv6Address]) -> bool:
    try:
        version(text.split("/")[0])
    except ValueError:
        return False
    return True


def _proxy_url(value: str) -> httpx.URL:
    return httpx.URL(value if "://" in value else "http://" + value)


class ProxyRoutes:
    """The proxy for each URL, from an explicit proxy or the environment.

    ``ProxyRoutes.from_env()`` reads the variables once (as httpx reads them once
    per client); :meth:`for_url` gives the proxy URL (with its credentials) or None
    for a direct connection.
    """

    __slots__ = ("_rules",)

    def __init__(self, rules: list[_Rule]) -> None:
        self._rules = sorted(rules, key=lambda rule: rule.rank)

    @classmethod
    def none(cls) -> ProxyRoutes:
        return cls([])

    @classmethod
    def single(cls, proxy: str | httpx.URL) -> ProxyRoutes:
        """Every URL through ``proxy`` (``NO_PROXY`` is not read)."""
        return cls([_Rule.make("all://", _proxy_url(str(proxy)))])

    @classmethod
    def from_env(cls) -> ProxyRoutes:
        """The rules of the process's ``*_PROXY`` and ``NO_PROXY`` variables."""
        found = urllib.request.getproxies()
        rules: list[_Rule] = []
        for scheme in ("http", "https", "all"):
            if found.get(scheme):
                rules.append(_Rule.make(f"{scheme}://", _proxy_url(found[scheme])))
        for entry in (part.strip() for part in found.get("no", "").split(",")):
            if entry == "*":
                return cls([])
            if not entry:
                continue
            if "://" in entry:
                key = entry
            elif _address(entry, ipaddress.IPv4Address) or entry.lower() == "localhost":
                key = f"all://{entry}"
            elif _address(entry, ipaddress.IPv6Address):
                key = f"all://[{entry}]"
            else:
                key = f"all://*{entry}"
            try:
                rules.append(_Rule.make(key, None))
            except httpx.InvalidURL:
                continue  # an entry httpx could not read either: ignored
        return cls(rules)

    def for_url(self, url: httpx.URL) -> httpx.URL | None:
        """The proxy for ``url``, or None to connect directly."""
        for rule in self._rules:
            if rule.matches(url):
                return rule.proxy
        return None

    def __bool__(self) -> bool:
        return any(rule.proxy is not None for rule in self._rules)


def redacted(proxy: httpx.URL | str | None) -> str | None:
    """A proxy URL fit to print: its password (and user name) replaced by ``***``."""
    if proxy is None:
        return None
    url = httpx.URL(str(proxy))
    if url.userinfo:
        url = url.copy_with(username="***", password=None)
    return str(url)
