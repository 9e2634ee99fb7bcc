"""Does sim predict real? Sim-versus-real metrics, failure regions and the comparison report.

Pure functions over episode tables (numpy), and the report's plots and page (matplotlib).
"""
