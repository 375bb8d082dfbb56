"""The contract between the studies' metrics files and the report.

Each kind of ``reports/metrics/*.json`` file has a :class:`MetricsSchema`: its top-level
keys (required and optional; any other key is an error) and the nested key paths that
readers rely on. Notebooks write through :func:`write_metrics` and the report reads through
:func:`read_metrics` and :meth:`MetricsSchema.get`, so a key the writer forgot, or one the
report reads without declaring it, is an error at once instead of a "—" in the page.

Key paths are ``"a/b/c"``; ``*`` stands for every key of a mapping or every element of a
list (which must not be empty). Each study writes two files: ``<name>_details.json``
(every table; kind ``<study>_details``) and ``<name>.json``, its headline (kind
``headline``: the shared columns of :mod:`facebias.studies.headlines`, which is what
``dvc metrics show`` renders). A file's kind is its name without ``.json``, except that
headline files share one kind, backends share their study's kind (``hcic_dcgan_details`` ->
``hcic_details``) and the opt-in real-data stages theirs (``bfw_real_<name>_details`` ->
``bfw_details``).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from facebias.io import write_json_atomic

__all__ = ["MetricsSchemaError", "MetricsSchema", "SCHEMAS", "STUDIES", "kind_of", "check_metrics", "write_metrics",
           "read_metrics"]


class MetricsSchemaError(ValueError):
    """A metrics file (or the dict about to become one) breaks its schema."""


def _resolve(node: Any, parts: Sequence[str], where: str) -> list[str]:
    """Missing key paths under ``node`` for the path ``parts`` (``where``: the prefix so far)."""
    if not parts:
        return []
    head, rest = parts[0], parts[1:]
    if head == "*":
        children = (list(node.items()) if isinstance(node, Mapping) else
                    [(str(i), v) for i, v in enumerate(node)] if isinstance(node, list) else None)
        if not children:
            return [f"{where}/*" if where else "*"]
        return [m for k, v in children for m in _resolve(v, rest, f"{where}/{k}" if where else str(k))]
    if not isinstance(node, Mapping) or head not in node:
        return [f"{where}/{head}" if where else head]
    return _resolve(node[head], rest, f"{where}/{head}" if where else head)


@dataclass(frozen=True)
class MetricsSchema:
    """Schema of one kind of metrics file. Readers may only :meth:`get` declared keys or
    paths (a prefix of one).

    Parameters
    ----------
    kind : str
        The kind (see :func:`kind_of`).
    required : tuple of str
        Top-level keys that must be present.
    optional : tuple of str, default ()
        Keys that may be present: top-level keys (any top-level key in neither tuple is an
        error) or nested paths ``"a/b"``.
    paths : tuple of str, default ()
        Nested key paths ``"a/b/c"`` that must exist; ``*`` = every key of a mapping or
        every element of a list (which must not be empty). A path under an optional key
        or path is checked only when that is present.

    Examples
    --------
    >>> s = MetricsSchema("demo", ("n", "groups"), ("note",), ("groups/*/fmr",))
    >>> m = {"n": 2, "groups": {"a": {"fmr": 0.1}, "b": {"fmr": 0.2}}}
    >>> s.check(m)
    >>> s.get(m, "groups/b/fmr"), s.get(m, "note", "-")
    (0.2, '-')
    >>> s.check({"n": 2, "groups": {"a": {}}, "extra": 1})
    Traceback (most recent call last):
    ...
    facebias.schema.MetricsSchemaError: demo metrics breaks ... missing ['groups/a/fmr'] unknown ['extra']
    """

    kind: str
    required: tuple[str, ...]
    optional: tuple[str, ...] = ()
    paths: tuple[str, ...] = field(default_factory=tuple)

    def check(self, metrics: Mapping[str, Any], source: str = "") -> None:
        """Check ``metrics`` against this schema.

        Parameters
        ----------
        metrics : mapping
            The metrics dict (a parsed file, or one about to be written).
        source : str, default ""
            Name used in the message (e.g. the file); default ``"<kind> metrics"``.

        Raises
        ------
        MetricsSchemaError
            Naming every missing required key or path and every unknown top-level key, or
            if ``metrics`` is not a mapping.
        """
        what = source or f"{self.kind} metrics"
        if not isinstance(metrics, Mapping):
            raise MetricsSchemaError(f"{what}: expected a JSON object, got {type(metrics).__name__}")
        missing = [k for k in self.required if k not in metrics]
        missing += [m for p in self.paths if not self._absent_optional(metrics, p)
                    for m in _resolve(metrics, p.split("/"), "") if m.split("/")[0] not in missing]
        unknown = sorted(set(metrics) - set(self.required) - {o for o in self.optional if "/" not in o})
        if missing or unknown:
            raise MetricsSchemaError(
                f"{what} breaks the {self.kind!r} schema (facebias.schema):"
                + (f" missing {missing}" if missing else "") + (f" unknown {unknown}" if unknown else ""))

    def _absent_optional(self, metrics: Mapping[str, Any], path: str) -> bool:
        """Whether ``path`` lies under an optional key or path that ``metrics`` lacks."""
        parts = path.split("/")
        for o in self.optional:
            q = o.split("/")
            if parts[:len(q)] == q:
                node: Any = metrics
                for key in q:
                    if not isinstance(node, Mapping) or key not in node:
                        return True
                    node = node[key]
        return False

    def _declared(self, path: str) -> bool:
        parts = path.split("/")
        if path in self.optional:
            return True
        if len(parts) == 1:
            return parts[0] in self.required
        return any(len(parts) <= len(q) and all(b in ("*", a) for a, b in zip(parts, q, strict=False))
                   for q in (p.split("/") for p in self.paths))

    def get(self, metrics: Mapping[str, Any], path: str, default: Any = None) -> Any:
        """The value at ``path``; ``default`` when it lies under an absent optional key or path.

        Parameters
        ----------
        metrics : mapping
            A checked metrics dict.
        path : str
            Declared key or key path ``"a/b/c"`` (concrete keys where the schema has ``*``).
        default : Any, optional
            Returned when ``path`` lies under an absent optional key or path.

        Returns
        -------
        Any
            The value.

        Raises
        ------
        KeyError
            If the schema does not declare ``path`` (a programming error).
        MetricsSchemaError
            If a declared key is missing from ``metrics``.
        """
        if not self._declared(path):
            raise KeyError(f"{self.kind!r} schema does not declare {path!r}: add it to facebias.schema")
        if self._absent_optional(metrics, path):
            return default
        node: Any = metrics
        for key in path.split("/"):
            if isinstance(node, Mapping) and key in node:
                node = node[key]
            else:
                raise MetricsSchemaError(f"{self.kind} metrics: no {path!r}")
        return node


def _s(kind: str, required: str, optional: str = "", paths: str = "") -> MetricsSchema:
    return MetricsSchema(kind, tuple(required.split()), tuple(optional.split()), tuple(paths.split()))


#: One schema per kind of metrics file.
SCHEMAS: dict[str, MetricsSchema] = {s.kind: s for s in (
    # the headline file of every study (studies.headlines: shared columns, one screen)
    _s("headline", "", "fmr bias bias_after planted truth_error recovered"),
    # "overview": the study's summary tables (studies.headlines.write_study_metrics)
    _s("bfw_details", "paper source provenance datatable grouping fmr systems overview",
       "rank1_diagonal seeds bootstrap_mc_error",  # the first two absent on a real datatable (no features, no world to reseed)
       paths="seeds/world_seeds seeds/system seeds/fmr_dev_pct/*/dev_pct systems/*/eer systems/*/d_prime systems/*/fmr_dev_pct systems/*/tar_at_far systems/*/legacy_tar "
             "systems/*/group_report rank1_diagonal/* overview/source "
             "overview/systems/*/max_abs_fmr_dev_pct/global/* overview/systems/*/max_abs_fmr_dev_pct/group/* "
             "overview/systems/*/fmr_ratio_global overview/systems/*/tar_avg/global overview/systems/*/tar_avg/group "
             "overview/systems/*/eer_max overview/systems/*/eer_min"),
    _s("batest_details", "paper source provenance factors method world accounting balance_report gender_gap "
       "dprime fmr_at_reference tpr_at_fmr real_images real_images_fte lfw_fte lfw_accounting "
       "lfw_balance_report lfw_pair_mask_iou identity_count identity_noise challenging overview",
       "table1 table1_pct face_area table3_impostors fmr_at_reference_gamma_negative tpr_fmr seeds bootstrap_mc_error",
       paths="seeds/world_seeds seeds/world_seeds_tables34 seeds/table1_pct/*/rom_pct seeds/table1_pct/*/seed "
             "seeds/table1_pct/*/kind seeds/table1_pct/*/condition seeds/table1_pct/*/race seeds/table3/*/fmr_at_ref "
             "seeds/table3/*/seed seeds/table3/*/group seeds/table3/*/set seeds/table3/*/fmr seeds/table4/*/tpr "
             "seeds/table4/*/seed seeds/table4/*/group seeds/gaps/*/seed seeds/gaps/*/set seeds/gaps/*/race "
             "seeds/gaps/*/gap_genuine seeds/gaps/*/planted_gap overview/planted_gap_genuine overview/gap_genuine overview/n_images "
             "overview/gap_rel_error_mean/original overview/gap_rel_error_mean/balanced "
             "overview/gap_rel_error_mean/balanced_nfh"),
    _s("synthetic_faces_details", "paper provenance summary normal_cosines transect_check overview",
       "overview/acceptance",  # absent with synthetic_faces.check_models false
       paths="overview/acceptance/gender_spearman_transect_pooled overview/acceptance/detect_rate overview/source overview/n_transect_images overview/n_hcic_images overview/pairs "
             "overview/orthogonality_max_error overview/hair_transect_gender_range/raw "
             "overview/hair_transect_gender_range/orthogonal"),
    _s("synthetic_faces_dcgan_details", "backend source n_transect_images n_hcic_images groups hyperplane_sources n_labelled "
       "hyperplane_r2 orthogonality_max_error acceptance detection gender_levers drift sequence_auc "
       "labeller_spearman orthogonalisation labeller_checks skin_gate", "bootstrap_mc_error",
       paths="drift/*/attribute drift/*/labeller drift/*/drift_raw drift/*/drift_orthogonal drift/*/reduction "
             "drift/*/axis drift/*/raw_resolved drift/*/verdict orthogonalisation/on_axis "
             "skin_gate/axis skin_gate/gate skin_gate/any_passes skin_gate/chosen_passes skin_gate/candidates "
             "acceptance/gender_spearman/measured acceptance/gender_spearman_best/measured "
             "acceptance/detect_rate/measured acceptance/median_impostor/measured"),
    _s("transects_details", "provenance params n_images pruning observational_pruning known_truth perceived_matches_intended "
       "shortcut_cnn_training_accuracy best_threshold headline planted_recovered gender_pixel_signal_by_skin "
       "classifiers", "known_truth_misspecified age_gender_best annotation_sd largest_errors bootstrap_mc_error",
       paths="headline/planted/experimental/hair_long headline/planted/experimental/skin_dark "
             "headline/planted/observational/skin_dark planted_recovered/*"),
    _s("transects_dcgan_details", "backend provenance labeller covariates params n_images pruning labeller_agreement "
       "observational_within_gender_correlation training headline planted_recovered classifiers",
       "interaction_test bootstrap_mc_error",
       paths="headline/*/experimental headline/*/observational/tone_dark labeller/model labeller/gender "
             "planted_recovered/*"),
    _s("hcic_details", "backend source provenance labels label_description groups group_kind group_description n_images "
       "n_pairs n_cross_group_pairs fmr_target n_boot bootstrap_unit fixed_thresholds upscale failure_to_enrol "
       "failure_to_enrol_by_group similarity_by_relation fnmr_at_fmr fnmr_at_fmr_intended_labels "
       "fnmr_at_fmr_by_attribute fixed_threshold_rates delta_attr_extension skipped",
       optional="hcic_label_counts realism_filter per_pair_sd group_independence self_pairs own_group_check seed_filter "
                "own_group_image_check group_differences bootstrap_mc_error",
       paths="similarity_by_relation/*/same_prototype similarity_by_relation/*/same_group "
             "similarity_by_relation/*/different_group similarity_by_relation/*/ordered "
             "fnmr_at_fmr_intended_labels/toy/*/fnmr"),
    _s("rapid_details", "paper provenance world n_faces queries_included label_agreement coverage type_a type_b "
       "kendall_tau_fnmr delta_fnmr delta_fnmr_naive delta_fnmr_type_a delta_fnmr_type_b eer_abs_error_max "
       "voting semi_supervised p_sweep breakdown bias subsets model_change",
       "seeds bootstrap_mc_error",  # seeds: the world-seed sweep (facebias.studies.rapid.seeds)
       paths="delta_fnmr/* delta_fnmr_naive/* bias/flagged_est bias/flagged_true bias/recovery/* "
             "seeds/world_seeds seeds/fmr seeds/labels/*/agreement seeds/fnmr/*/delta seeds/fnmr/*/est_minus_true "
             "seeds/fnmr/*/delta_naive seeds/ranking/*/kendall_tau seeds/eer/*/eer_est seeds/eer/*/eer_true "
             "seeds/bias/*/flagged_est seeds/bias/*/planted seeds/bias_recovery/*/flags_agree seeds/voting/*/delta"),
)}


#: The studies (metrics kinds without ``_details``); ``<study>.json`` is a headline file.
STUDIES = tuple(k.removesuffix("_details") for k in SCHEMAS if k.endswith("_details"))


def kind_of(path: str | os.PathLike) -> str:
    """The schema kind of a metrics file, from its name (see the module docstring).

    Parameters
    ----------
    path : str or os.PathLike
        The metrics file, e.g. ``reports/metrics/hcic_dcgan.json``.

    Returns
    -------
    str
        A key of :data:`SCHEMAS`.

    Raises
    ------
    MetricsSchemaError
        If no schema matches the name.

    Examples
    --------
    >>> kind_of("reports/metrics/hcic_dcgan_details.json"), kind_of("bfw_real_lfw_details.json")
    ('hcic_details', 'bfw_details')
    >>> kind_of("reports/metrics/hcic_dcgan.json"), kind_of("bfw_real_lfw.json")
    ('headline', 'headline')
    """
    stem = Path(path).name.removesuffix(".json")
    stem = re.sub(r"^bfw_real_.+?(_details)?$", lambda m: "bfw" + (m.group(1) or ""), stem)
    stem = re.sub(r"^hcic_dcgan(_details)?$", lambda m: "hcic" + (m.group(1) or ""), stem)
    if stem in STUDIES:
        return "headline"
    if stem not in SCHEMAS:
        raise MetricsSchemaError(f"{path}: no metrics schema for kind {stem!r}; known kinds {sorted(SCHEMAS)}")
    return stem


def check_metrics(metrics: Mapping[str, Any], kind: str, source: str = "") -> MetricsSchema:
    """Check ``metrics`` against the schema of ``kind``.

    Parameters
    ----------
    metrics : mapping
        The metrics dict.
    kind : str
        A key of :data:`SCHEMAS`.
    source : str, default ""
        Name used in error messages.

    Returns
    -------
    MetricsSchema
        The schema of ``kind``.

    Raises
    ------
    MetricsSchemaError
        For an unknown ``kind``, or as :meth:`MetricsSchema.check`.
    """
    if kind not in SCHEMAS:
        raise MetricsSchemaError(f"no metrics schema for kind {kind!r}; known kinds {sorted(SCHEMAS)}")
    schema = SCHEMAS[kind]
    schema.check(metrics, source)
    return schema


def write_metrics(path: str | os.PathLike, metrics: Mapping[str, Any], kind: str | None = None) -> Path:
    """Check ``metrics`` against its schema, then write it as strict JSON atomically
    (:func:`facebias.io.write_json_atomic`).

    Parameters
    ----------
    path : str or os.PathLike
        The metrics file.
    metrics : mapping
        The metrics dict.
    kind : str, optional
        Schema kind; default :func:`kind_of` ``(path)``.

    Returns
    -------
    pathlib.Path
        The file written.

    Raises
    ------
    MetricsSchemaError
        If the dict breaks its schema (nothing is written) or no schema matches.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     write_metrics(f"{d}/rapid_details.json", {"paper": "001"})
    Traceback (most recent call last):
    ...
    facebias.schema.MetricsSchemaError: .../rapid_details.json breaks the 'rapid_details' schema (facebias.schema): missing [...]
    """
    check_metrics(metrics, kind or kind_of(path), str(path))
    return write_json_atomic(path, metrics)


def read_metrics(path: str | os.PathLike, kind: str | None = None) -> tuple[dict[str, Any], MetricsSchema]:
    """Read a metrics file and check it against its schema.

    Parameters
    ----------
    path : str or os.PathLike
        The metrics file.
    kind : str, optional
        Schema kind; default :func:`kind_of` ``(path)``.

    Returns
    -------
    metrics : dict
        The parsed file.
    schema : MetricsSchema
        Its schema, for :meth:`MetricsSchema.get`.

    Raises
    ------
    MetricsSchemaError
        Naming the file: for invalid JSON, a schema break or no matching schema.
    FileNotFoundError
        If the file does not exist.
    """
    p = Path(path)
    try:
        metrics = json.loads(p.read_bytes().decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise MetricsSchemaError(f"{p}: not UTF-8 JSON text (byte {exc.object[exc.start]:#04x} at offset "
                                 f"{exc.start})") from None
    except json.JSONDecodeError as exc:
        raise MetricsSchemaError(f"{p}: not valid JSON ({exc})") from None
    return metrics, check_metrics(metrics, kind or kind_of(p), str(p))
