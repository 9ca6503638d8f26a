"""armgen's data, installed as packages of their own so that wheels and editable installs find them
the same way (pyproject.toml maps the repository's top-level folders here):

    armgen.data.boards     <- boards/     (one YAML file per board, schema.json, aliases.yaml)
    armgen.data.templates  <- templates/  (jinja2 project templates)
    armgen.data.modules    <- modules/    (the pinned west manifests)
    armgen.data.samples    <- samples/    (built-in models)

Code reaches them through :mod:`armgen.paths`, never through the checkout's location.
"""
