"""armgen data package armgen.data.templates (see generator/armgen/data/__init__.py): data files only."""
