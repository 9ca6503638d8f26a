"""armgen data package armgen.data.modules (see generator/armgen/data/__init__.py): data files only."""
