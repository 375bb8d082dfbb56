"""Machine labels of the annotation store (:class:`facebias.annotate.store.AnnotationStore`):
each labeller's measurements of the registered items (NaN = could not measure, stored), and
the registered labellers.

The methods are those of :class:`~facebias.annotate.store.AnnotationStore` (a mixin it
inherits; the connection, lock and transaction are the store's own).
"""

from __future__ import annotations

import math
import numbers
import sqlite3
import time as _time

import numpy as np
import pandas as pd

from facebias.annotate.store_schema import LABEL_COLUMNS
from facebias.validate import require_columns


class _LabelMethods:
    """:class:`~facebias.annotate.store.AnnotationStore`'s machine labels."""

    # ------------------------------------------------------------------ machine labels
    def labellers(self) -> pd.DataFrame:
        """Registered machine labellers, in registration order.

        Returns
        -------
        pandas.DataFrame
            Columns ``labeller, attribute, unit, description`` (empty for a store written
            before machine labels existed).
        """
        if not self._has_labels:
            return pd.DataFrame(columns=["labeller", "attribute", "unit", "description"], dtype=str)
        with self._lock:
            return pd.read_sql_query("SELECT labeller, attribute, unit, description FROM labellers "
                                     "ORDER BY rowid", self._conn)

    def add_labels(self, labels: pd.DataFrame, labeller: str, attribute: str, unit: str,
                   description: str = "", time: float | None = None) -> int:
        """Store one machine labeller's measurements, validated first, in one transaction.

        Parameters
        ----------
        labels : pandas.DataFrame
            Columns ``item_id`` (registered items) and ``value`` (float in ``unit``; NaN or
            None = could not measure, stored as a failure).
        labeller : str
            Non-empty labeller id; it labels each item at most once.
        attribute : str
            Non-empty attribute measured (fixed at the labeller's first write).
        unit : str
            Unit of ``value`` (fixed at the labeller's first write).
        description : str, default ""
            Free text stored with a new labeller.
        time : float, optional
            UNIX seconds; default now.

        Returns
        -------
        int
            Number of labels stored.

        Raises
        ------
        ValueError
            Nothing stored: for an empty labeller or attribute, a non-string unit, a
            missing column, an unknown item, a non-numeric or infinite value, an item this
            labeller already labelled, the labeller registered with another attribute or
            unit, or a read-only store.
        """
        where = f"labels of {labeller!r}"
        for name, v in (("labeller", labeller), ("attribute", attribute)):
            if not isinstance(v, str) or not v:
                raise ValueError(f"{where}: {name} must be a non-empty string, got {v!r}")
        if not isinstance(unit, str):
            raise ValueError(f"{where}: unit must be a string, got {unit!r}")
        if not isinstance(labels, pd.DataFrame):
            raise ValueError(f"{where}: labels must be a DataFrame, got {type(labels).__name__}")
        require_columns(labels, ["item_id", "value"], where)
        t = _time.time() if time is None else float(time)
        with self._lock:
            known_items = {r[0] for r in self._conn.execute("SELECT item_id FROM items")}

            def check_labeller(c: sqlite3.Connection) -> None:
                old = c.execute("SELECT attribute, unit FROM labellers WHERE labeller = ?",
                                (labeller,)).fetchone()
                if old is not None and tuple(old) != (attribute, unit):
                    raise ValueError(f"{where}: registered for attribute {old[0]!r} in "
                                     f"{old[1]!r}, got {attribute!r} in {unit!r}")

            check_labeller(self._conn)
            done = {r[0] for r in self._conn.execute("SELECT item_id FROM labels WHERE labeller = ?",
                                                     (labeller,))}
            rows, seen = [], set()
            for i, (item, value) in enumerate(zip(labels["item_id"].tolist(), labels["value"].tolist(),
                                                  strict=True)):
                here = f"{where}, row {i} ({item!r})"
                if item not in known_items:
                    raise ValueError(f"{here}: unknown item_id (register it with add_items)")
                if item in seen or item in done:
                    raise ValueError(f"{here}: this labeller already labelled the item")
                seen.add(item)
                if value is None or value is pd.NA:
                    v = None
                elif isinstance(value, numbers.Real) and not isinstance(value, bool | np.bool_):
                    v = None if math.isnan(value) else float(value)
                    if v is not None and not math.isfinite(v):
                        raise ValueError(f"{here}: value must be finite or NaN, got {value!r}")
                else:
                    raise ValueError(f"{here}: value must be a number or NaN, got {value!r}")
                rows.append((item, labeller, v, t, "machine"))

            def write(c: sqlite3.Connection) -> None:
                # idempotent, checked inside the transaction: another process may register
                # the same labeller at the same time
                c.execute("INSERT INTO labellers (labeller, attribute, unit, description) "
                          "VALUES (?,?,?,?) ON CONFLICT (labeller) DO NOTHING",
                          (labeller, attribute, unit, str(description)))
                check_labeller(c)
                c.executemany("INSERT INTO labels (item_id, labeller, value, time, source) "
                              "VALUES (?,?,?,?,?)", rows)

            if rows:
                self._write(write)
        return len(rows)

    def labels(self, attribute: str | None = None, labeller: str | None = None) -> pd.DataFrame:
        """Stored machine labels in insertion order, optionally one attribute and/or labeller.

        Parameters
        ----------
        attribute : str, optional
            Keep only labels of this attribute.
        labeller : str, optional
            Keep only this labeller's labels.

        Returns
        -------
        pandas.DataFrame
            Columns :data:`LABEL_COLUMNS`: ``item_id, labeller, attribute, value`` (NaN =
            failed to measure), ``unit``, ``time`` (UNIX seconds), ``source`` (always
            ``"machine"``).
        """
        sql = ("SELECT l.item_id, l.labeller, r.attribute, l.value, r.unit, l.time, l.source "
               "FROM labels l JOIN labellers r ON l.labeller = r.labeller")
        cond, args = [], []
        if attribute is not None:
            cond.append("r.attribute = ?")
            args.append(attribute)
        if labeller is not None:
            cond.append("l.labeller = ?")
            args.append(labeller)
        if cond:
            sql += " WHERE " + " AND ".join(cond)
        with self._lock:
            rows = self._conn.execute(sql + " ORDER BY l.seq", args).fetchall() if self._has_labels else []
        df = pd.DataFrame(rows, columns=LABEL_COLUMNS)
        return df.astype({"item_id": str, "labeller": str, "attribute": str, "value": "float64",
                          "unit": str, "time": "float64", "source": str})
