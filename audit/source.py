"""Open a real table read-only through PyIceberg's own catalog configuration.

``open_table`` takes what ``icecheck audit`` was given: a catalog name (PyIceberg's
``~/.pyiceberg.yaml`` and ``PYICEBERG_CATALOG__<NAME>__*`` environment variables, read by
``pyiceberg.catalog.load_catalog``), or a catalog URI (``sqlite:////path/cat.db``,
``postgresql://...``, ``http(s)://`` for REST, ``thrift://`` for Hive: PyIceberg infers the
type from it) with extra properties. Every problem opening it is an ``InputError`` naming the
option or the table, so the command says it in one line and exits 2.

Read only: the audit never commits, and a SQL catalog is opened with
``init_catalog_tables=false`` so that PyIceberg does not create its tables in a database that
lacks them; a SQLite URI must name an existing file (SQLAlchemy would create an empty one).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from icecheck.scenarios.errors import InputError


@dataclass
class Source:
    catalog: object           # pyiceberg.catalog.Catalog
    table: object             # pyiceberg.table.Table
    identifier: str
    catalog_name: str
    where: str                # how the catalog was found, for the report


def _sqlite_file(uri: str) -> str | None:
    """The file a ``sqlite:///...`` URI names (None for an in-memory database)."""
    rest = uri.split(":", 1)[1]
    if not rest.startswith("///"):
        return None
    path = rest[3:].split("?", 1)[0]
    return path or None


def catalog_properties(catalog_uri: str | None, warehouse: str | None,
                       properties: dict[str, str]) -> dict[str, str]:
    """The properties handed to ``load_catalog``, next to what PyIceberg's configuration has."""
    props = dict(properties)
    if catalog_uri:
        props["uri"] = catalog_uri
    if warehouse:
        props["warehouse"] = warehouse
    props.setdefault("init_catalog_tables", "false")      # never create catalog tables
    return props


def open_catalog(catalog_name: str | None, catalog_uri: str | None, warehouse: str | None,
                 properties: dict[str, str] | None = None):
    """``(catalog, name, where)`` or an ``InputError`` naming the option to fix."""
    try:
        from pyiceberg.catalog import load_catalog
        from pyiceberg.utils.config import Config
    except ImportError as e:
        from icecheck.install_hint import install_hint
        raise InputError(f"PyIceberg is not installed ({e}); run: {install_hint('audit')} "
                         f"(bin/icecheck audit installs it itself)", "--catalog") from None
    option = "--catalog" if catalog_uri else "--catalog-name"
    name = catalog_name or (Config().get_default_catalog_name() if not catalog_uri else "audit")
    props = catalog_properties(catalog_uri, warehouse, properties or {})
    configured = Config().get_catalog_config(name) or {}
    uri = props.get("uri") or configured.get("uri")
    if not uri and not configured.get("type") and not props.get("type"):
        raise InputError(f"no catalog named {name!r} in PyIceberg's configuration "
                         "(~/.pyiceberg.yaml or PYICEBERG_CATALOG__* variables); "
                         "name one with --catalog-name, or give --catalog URI", option)
    if isinstance(uri, str) and uri.startswith("sqlite:"):
        f = _sqlite_file(uri)
        if f and not os.path.isfile(f):
            raise InputError(f"no SQLite catalog database at {f}", option)
    try:
        catalog = load_catalog(name, **props)
    except Exception as e:  # noqa: BLE001 - any failure to open is one line, exit 2
        raise InputError(f"cannot open catalog {name!r}: {_one_line(e)}", option) from None
    where = f"{catalog_uri}" if catalog_uri else f"PyIceberg configuration, catalog {name!r}"
    return catalog, name, where


def open_table(identifier: str, catalog_name: str | None = None, catalog_uri: str | None = None,
               warehouse: str | None = None, properties: dict[str, str] | None = None) -> Source:
    """The table ``identifier`` (``namespace.table``), loaded from the catalog."""
    if not identifier or "." not in identifier.strip(".") or identifier.strip() != identifier:
        raise InputError("name the table with its namespace, e.g. db.events", identifier or "TABLE")
    catalog, name, where = open_catalog(catalog_name, catalog_uri, warehouse, properties)
    try:
        from pyiceberg.exceptions import NoSuchNamespaceError, NoSuchTableError
        try:
            table = catalog.load_table(identifier)
        except (NoSuchTableError, NoSuchNamespaceError):
            others = _sql_catalog_names(catalog, identifier) if not catalog_name else []
            if len(others) == 1:
                # a SQL catalog database keeps each catalog's tables under its name: with only
                # a URI given, the one catalog that has the table is the one meant
                return open_table(identifier, others[0], catalog_uri, warehouse, properties)
            every = _sql_catalog_names(catalog, None) if not catalog_name else []
            hint = (f" (catalogs in that database with this table: {', '.join(others)}; "
                    "choose one with --catalog-name)") if others else (
                f" (catalogs in that database: {', '.join(every)})" if every else "")
            raise InputError(f"no such table in catalog {name!r}{hint}", identifier) from None
    except InputError:
        raise
    except Exception as e:  # noqa: BLE001 - a table that cannot be read: one line, exit 2
        raise InputError(f"cannot read the table from catalog {name!r}: {_one_line(e)}",
                         identifier) from None
    return Source(catalog, table, identifier, name, where)


def _sql_catalog_names(catalog, identifier: str | None) -> list[str]:
    """The catalog names under which a SQL catalog's database holds ``identifier`` (any
    table, with None): a read of PyIceberg's ``iceberg_tables``."""
    engine = getattr(catalog, "engine", None)
    if engine is None:
        return []
    namespace, _, table = (identifier or "").rpartition(".")
    where = "" if identifier is None else \
        " WHERE table_namespace = :n AND table_name = :t"
    try:
        from sqlalchemy import text
        with engine.connect() as c:
            rows = c.execute(text("SELECT DISTINCT catalog_name FROM iceberg_tables" + where),
                             {"n": namespace, "t": table}).fetchall()
    except Exception:  # noqa: BLE001 - not a SQL catalog we know: no hint
        return []
    return sorted(r[0] for r in rows)


def _one_line(e: BaseException) -> str:
    text = " ".join(str(e).split()) or type(e).__name__
    return text if len(text) <= 300 else text[:297] + "..."
