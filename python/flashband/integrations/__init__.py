"""flashband under other libraries' model code. Each integration is an optional extra
(``pip install flashband[transformers]``) and imports its library only when used."""
