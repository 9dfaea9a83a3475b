"""One module per paper, reproducing its tables and figures (see bench/README.md).

* :mod:`bench.papers.saha2011` — OMTL (Table 2, Tables 3-5);
* :mod:`bench.papers.xu2018_amlc` — active learning with a committee (Table 1, Fig. 1);
* :mod:`bench.papers.ruvolo_ella` — ELLA lifelong learning curves (ruvolo2014 Fig. 2);
* :mod:`bench.papers.zhang2018_rom` — robust online multitask learning (Table I), with
  its rows and grids in :mod:`~bench.papers.zhang2018_rom_setup` and its outlier-detection
  stages in :mod:`~bench.papers.zhang2018_rom_outliers`.
"""
