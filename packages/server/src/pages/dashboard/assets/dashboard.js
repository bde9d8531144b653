// The dashboards' one script, the copy buttons: `<button data-copy="element-id">` copies that input's value.
// The pages work without it too.
document.addEventListener("click", (event) => {
  const button = event.target instanceof Element ? event.target.closest("[data-copy]") : null
  if (button === null) return
  const source = document.getElementById(button.getAttribute("data-copy"))
  if (source === null) return
  const value = "value" in source ? source.value : source.textContent
  const done = () => {
    button.textContent = "Copied"
    setTimeout(() => {
      button.textContent = "Copy"
    }, 2000)
  }
  if (navigator.clipboard)
    navigator.clipboard.writeText(value).then(done, () => {
      source.select()
      document.execCommand("copy")
      done()
    })
  else {
    source.select()
    document.execCommand("copy")
    done()
  }
})
