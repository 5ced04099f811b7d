"""Importers for real public cluster traces (Alibaba PAI 2020, disaggregated DLRM 2025)."""
